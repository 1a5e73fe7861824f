"""Near-duplicate audio: `dedup_audio`'s recall and false removals against planted copies.

Two corpora, each run through `decode_audio`, `audio_quality` and `dedup_audio` by
`mixplane process`:

- synthetic: `mixplane synth --audio` (espeak-ng speech in six languages), whose truth names
  every planted copy (re-encoded, trimmed, gain-changed, resampled);
- real: the sound files of four Debian packages (freedesktop and deepin sound themes,
  alsa-utils' spoken channel names, sound-icons), fetched with `apt-get download` and
  unpacked under bench/data/sounds/, each with copies made here: re-encoded (MP3, or Ogg
  Vorbis at a rate MP3 does not take), a trim of 5 to 10% at the start and 7.5% at the end,
  6 dB quieter, and resampled to 22.05 kHz.

Recall: the share of planted copies removed. Removals across groups: clips removed as a
duplicate of a clip of another group; on the synthetic corpus these are false removals; on
the real one they are listed by file name, since sound themes hold the same sound under
several names.

Run:
    PYTHONPATH=src python -m bench.audio.dedup --samples 600 [--only synthetic|real]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import tarfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import soundfile

from mixplane.document import Drop
from mixplane.io.audio_codec import decode, encode, probe
from mixplane.process.pipeline import run_pipeline
from mixplane.stages.audio.resample import resample
from mixplane.synth.audio import generate_audio_corpus, read_audio_truth

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "sounds"
RESULTS = ROOT / "bench" / "results" / "audio-dedup.json"
PACKAGES = ("sound-theme-freedesktop", "deepin-sound-theme", "alsa-utils", "sound-icons")
MP3_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)
SUFFIXES = (".wav", ".oga", ".ogg", ".flac", ".mp3")
STAGES = [
    {"decode_audio": {}},
    {"audio_quality": {"min_duration": 0.05, "max_silence_ratio": 0.95}},
    {"dedup_audio": {}},
]


def gather_sounds(root: Path = DATA) -> list[Path]:
    """The packages' sound files (downloaded and unpacked once), sorted by path."""
    unpacked = root / "unpacked"
    if not (root / "unpacked.done").exists():
        debs = root / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", "-q", *PACKAGES], cwd=debs, check=True)
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
        (root / "unpacked.done").write_text("")
    return sorted(p for p in unpacked.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file())


def copies_of(samples: np.ndarray, rate: int, rng: np.random.Generator) -> dict[str, bytes]:
    """The planted copies of one real sound, by transform."""
    cut = len(samples) // 10
    trimmed = samples[int(rng.integers(cut // 2, cut + 1)) : len(samples) - int(cut * 0.75)]
    lossy = io.BytesIO()
    if rate in MP3_RATES:
        soundfile.write(lossy, samples, rate, format="MP3", subtype="MPEG_LAYER_III")
        name = "reencode.mp3"
    else:  # MP3 takes none of the other rates: Vorbis then
        soundfile.write(lossy, samples, rate, format="OGG", subtype="VORBIS")
        name = "reencode.ogg"
    return {
        name: lossy.getvalue(),
        "trim.flac": encode(trimmed, rate, "flac"),
        "gain.flac": encode(samples * 10 ** (-6 / 20), rate, "flac"),
        "resample.flac": encode(resample(samples, rate, 22050), 22050, "flac"),
    }


def write_real_corpus(
    out: Path, sounds: list[Path], seed: int = 0
) -> tuple[dict[str, str], dict[str, float]]:
    """A WebDataset tar of the sounds and their copies; returns {doc_id: group} and each
    group's duration in seconds."""
    rng = np.random.default_rng(seed)
    groups: dict[str, str] = {}
    durations: dict[str, float] = {}
    seen: dict[bytes, str] = {}
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out / "real.tar", "w") as tar:
        for number, path in enumerate(sounds):
            data = path.read_bytes()
            info = probe(data)
            samples = info if isinstance(info, Drop) else decode(data, info)
            if isinstance(samples, Drop):
                continue
            key = f"{number:05d}"
            digest = np.round(samples, 4).tobytes()
            group = seen.setdefault(digest, key)  # byte-identical sounds are one group
            durations[group] = len(samples) / info.sample_rate
            members = {f"{key}{path.suffix.lower()}": data}
            for name, copy in copies_of(samples, info.sample_rate, rng).items():
                members[f"{key}_{name.split('.')[0]}.{name.split('.')[1]}"] = copy
            for name, payload in members.items():
                member = tarfile.TarInfo(name)
                member.size = len(payload)
                tar.addfile(member, io.BytesIO(payload))
                groups[f"real.tar/{name.split('.')[0]}"] = group
    return groups, durations


def measure(groups: dict[str, str], output: Path) -> dict:
    """Recall and removals across groups of a processed corpus.

    Recall: planted copies removed (as duplicates of any clip). Across groups: clips removed
    as a duplicate of a clip of another group, with the pair, since a corpus may hold the
    same sound twice under two names (the real corpus does); on the synthetic corpus,
    whose truth is complete, every one is a false removal.
    """
    excluded = pq.read_table(output / "_excluded", columns=["id", "reason", "detail"])
    removed = {}
    other = Counter()
    for row in excluded.to_pylist():
        if row["reason"] == "duplicate":
            removed[row["id"]] = json.loads(row["detail"])["duplicate_of"]
        else:
            other[row["reason"]] += 1
    members: dict[str, list[str]] = {}
    for doc, group in groups.items():
        members.setdefault(group, []).append(doc)
    planted = [doc for docs in members.values() for doc in docs[1:]]
    across = sorted(
        (doc, survivor)
        for doc, survivor in removed.items()
        if doc in groups and groups.get(survivor, survivor) != groups[doc]
    )
    return {
        "clips": len(groups),
        "planted_copies": len(planted),
        "recall": round(sum(doc in removed for doc in planted) / max(1, len(planted)), 4),
        "removed_across_groups": len(across),
        "across_rate": round(len(across) / max(1, len(groups)), 4),
        "other_exclusions": dict(sorted(other.items())),
        "across_pairs": [f"{doc} -> {survivor}" for doc, survivor in across],
    }


def synthetic(work: Path, samples: int, seed: int) -> dict:
    corpus = work / "synthetic"
    generate_audio_corpus(str(corpus), samples, seed, overwrite=True)
    truth = read_audio_truth(str(corpus))
    by_sample = dict(zip(truth.sample_id, truth.doc_id, strict=True))
    groups = {}
    for doc, kind, original in zip(truth.doc_id, truth.kind, truth.duplicate_of, strict=True):
        if kind != "bad":
            groups[doc] = by_sample[original] if kind == "duplicate" else doc
    started = time.perf_counter()
    out = work / "synthetic-out"
    shutil.rmtree(out, ignore_errors=True)
    run_pipeline(
        {"input": str(corpus / "raw" / "webdataset"), "output": str(out), "stages": STAGES}
    )
    result = measure(groups, out)
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["by_transform"] = _by_transform(truth, out)
    return result


def _by_transform(truth, out: Path) -> dict:
    excluded = pq.read_table(out / "_excluded", columns=["id", "reason"]).to_pylist()
    removed = {row["id"] for row in excluded if row["reason"] == "duplicate"}
    copies = truth[truth.kind == "duplicate"]
    result = {}
    for transform, docs in copies.groupby("transform").doc_id:
        result[transform] = f"{sum(doc in removed for doc in docs)}/{len(docs)}"
    return result


def real(work: Path) -> dict:
    sounds = gather_sounds()
    corpus = work / "real"
    groups, durations = write_real_corpus(corpus, sounds)
    out = work / "real-out"
    started = time.perf_counter()
    shutil.rmtree(out, ignore_errors=True)
    run_pipeline({"input": str(corpus), "output": str(out), "stages": STAGES})
    result = measure(groups, out)
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["sounds"] = len(sounds)
    for label, keep in (("at_least_1s", lambda g: durations[g] >= 1.0),
                        ("under_1s", lambda g: durations[g] < 1.0)):  # fmt: skip
        part = {doc: group for doc, group in groups.items() if keep(group)}
        measured = measure(part, out)
        result[label] = {key: measured[key] for key in ("clips", "planted_copies", "recall")}
    names = {f"{number:05d}": path.relative_to(DATA / "unpacked").as_posix()
             for number, path in enumerate(sounds)}  # fmt: skip
    result["across_pairs"] = [
        " -> ".join(names[part.split("/")[-1].split("_")[0]] for part in pair.split(" -> "))
        for pair in result["across_pairs"]
        if "_" not in pair.split(" -> ")[0].split("/")[-1]  # the originals, once each
    ]
    removed = {
        row["id"]
        for row in pq.read_table(out / "_excluded", columns=["id", "reason"]).to_pylist()
        if row["reason"] == "duplicate"
    }
    copies: dict[str, list[str]] = {}
    for doc in groups:
        if "_" in doc:
            copies.setdefault(doc.rsplit("_", 1)[1], []).append(doc)
    result["by_transform"] = {
        name: f"{sum(doc in removed for doc in docs)}/{len(docs)}"
        for name, docs in sorted(copies.items())
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", default=str(ROOT / "bench" / "data" / "audio-dedup"))
    parser.add_argument("--only", choices=("synthetic", "real"), help="run one corpus")
    args = parser.parse_args()
    work = Path(args.work)
    results = json.loads(RESULTS.read_text()) if args.only and RESULTS.exists() else {}
    if args.only != "real":
        results["synthetic"] = synthetic(work, args.samples, args.seed)
    if args.only != "synthetic":
        results["real"] = real(work)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
