"""Audio-text shards for the loader benchmark: espeak-ng speech of log-normal durations,
written by `mixplane process` as audio shards (16 kHz mono FLAC) and registered in a
catalog.

Each clip's duration is drawn from a log-normal (median `MEDIAN_S`, sigma `SIGMA`) and
kept to [1, 20] s, as in read-speech corpora; the clip is espeak-ng reading sentences of the
synthetic text corpus in one of five languages, with a speed and pitch drawn per clip, until
the duration is reached, then cut there (the transcript is the sentences read, the last one
possibly cut short in the audio). The raw clips (22.05 kHz WAV, espeak-ng's rate) go into
WebDataset tars; `mixplane process` with `decode_audio` and `resample_audio` (16 kHz, mono,
FLAC) writes them as audio shards (`output_format: webdataset`, `output_media: audio`),
which the catalog registers as `speech`.

Everything is kept under the work folder and made once (`ready.json` says what is there);
the same arguments and the same espeak-ng give the same clips.

Example:
    >>> folder = prepare(Path("/tmp/audio-bench"), clips=2000)  # doctest: +SKIP
    >>> sorted(p.name for p in (folder / "shards").glob("*.tar"))[:1]  # doctest: +SKIP
    ['part-00000.tar']
"""

from __future__ import annotations

import io
import json
import math
import random
import tarfile
import time
from pathlib import Path

import numpy as np
import soundfile
import yaml

MEDIAN_S = 5.0
SIGMA = 0.6
SHORTEST_S, LONGEST_S = 1.0, 20.0
SPOKEN = ("de", "en", "es", "fr", "zh")
RAW_RATE = 22050  # what espeak-ng speaks at


def prepare(work: Path, clips: int, shards: int = 16, seed: int = 0) -> Path:
    """`work/speech-CLIPS` holding `raw/` (the input tars), `shards/` (the audio shards),
    `catalog.duckdb` and `mixture.yaml`; made once, reused after."""
    folder = work / f"speech-{clips}"
    done = folder / "ready.json"
    if done.exists():
        return folder
    from mixplane.catalog import Catalog
    from mixplane.process.pipeline import run_pipeline

    started = time.perf_counter()
    raw = folder / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    per_shard = math.ceil(clips / shards)
    for shard in range(shards):
        numbers = range(shard * per_shard, min(clips, (shard + 1) * per_shard))
        samples = [spoken_sample(number, rng) for number in numbers]
        (raw / f"speech-{shard:05d}.tar").write_bytes(_tar(samples))
    run_pipeline(
        {
            "input": str(raw / "*.tar"),
            "output": str(folder / "shards"),
            "output_format": "webdataset",
            "output_media": "audio",
            "stages": [
                {"decode_audio": {}},
                {"resample_audio": {"sample_rate": 16000, "channels": 1, "format": "flac"}},
            ],
            "workers": 2,
        }
    )
    catalog = folder / "catalog.duckdb"
    Catalog(str(catalog)).register(str(folder / "shards"), "speech")
    mixture = {"kind": "audio_text", "catalog": str(catalog), "seed": 1234,
               "components": {"speech": {"datasets": ["speech"], "weight": 1.0}}}  # fmt: skip
    (folder / "mixture.yaml").write_text(yaml.safe_dump(mixture))
    tars = sorted((folder / "shards").glob("*.tar"))
    info = {
        "clips": clips,
        "seed": seed,
        "shards": len(tars),
        "bytes": sum(t.stat().st_size for t in tars),
        "audio_seconds": round(_audio_seconds(folder / "shards"), 1),
        "seconds_to_make": round(time.perf_counter() - started, 1),
    }
    done.write_text(json.dumps(info, indent=2))
    return folder


def spoken_sample(number: int, rng: random.Random) -> dict:
    """One clip: espeak-ng reading sentences until a log-normal duration is reached."""
    from mixplane.synth.audio.speech import speak
    from mixplane.synth.languages import LANGUAGES
    from mixplane.synth.prose import sentences

    duration = min(LONGEST_S, max(SHORTEST_S, rng.lognormvariate(math.log(MEDIAN_S), SIGMA)))
    code = SPOKEN[int(rng.random() * len(SPOKEN))]
    language = LANGUAGES[code]
    speed, pitch = 140 + int(rng.random() * 60), 25 + int(rng.random() * 50)
    said: list[str] = []
    parts: list[np.ndarray] = []
    while sum(len(p) for p in parts) < duration * RAW_RATE:
        sentence = sentences(language, rng, language.topic(rng), 1)[0]
        wav = speak(sentence, code, speed=speed, pitch=pitch)
        samples, rate = soundfile.read(io.BytesIO(wav), dtype="int16")
        assert rate == RAW_RATE, rate
        said.append(sentence)
        parts.append(samples)
    clip = np.concatenate(parts)[: round(duration * RAW_RATE)]
    wav = io.BytesIO()
    soundfile.write(wav, clip, RAW_RATE, format="WAV", subtype="PCM_16")
    meta = {"language": code, "speaker": f"s{speed}-{pitch}"}
    return {"key": f"{number:06d}", "wav": wav.getvalue(), "txt": language.join(said),
            "json": json.dumps(meta)}  # fmt: skip


def _tar(samples: list[dict]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for sample in samples:
            for ext in ("wav", "txt", "json"):
                data = sample[ext] if ext == "wav" else sample[ext].encode("utf-8")
                member = tarfile.TarInfo(f"{sample['key']}.{ext}")
                member.size, member.mtime = len(data), 0
                tar.addfile(member, io.BytesIO(data))
    return out.getvalue()


def _audio_seconds(shards: Path) -> float:
    import pyarrow.parquet as pq

    return sum(
        float(pq.read_table(meta, columns=["duration"]).column("duration").to_numpy().sum())
        for meta in shards.glob("*.meta.parquet")
    )
