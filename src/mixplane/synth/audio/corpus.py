"""`generate_audio_corpus`: spoken clips with transcripts in WebDataset tars, with truth.

Layout under the output folder (paths relative to it):

- `raw/webdataset/shard-NNNNN.tar`: tars of `per_shard` samples, members `KEY.EXT` (the
  clip: `flac`, `wav`, `mp3` or `ogg`), `KEY.txt` (the transcript) and `KEY.json`
  (`sample_id`, `language`, `speaker`). KEY is a six-digit serial.
- `truth/audio_summary.json`: the summary (counts by kind, transform, language, format).
- `truth/audio.parquet`: one row per sample: `doc_id` (the id mixplane's WebDataset reader
  gives it with `raw/webdataset` as the input: `shard-00000.tar/000123`), `sample_id`,
  `kind` (`original`, `duplicate` or `bad`), `language`, `transcript`, `format`,
  `duplicate_of` (the original's sample id), `transform` (how a duplicate was made) and
  `expected_reason` (the exclusion a bad file should get).

Clips are espeak-ng speaking a sentence in German, English, Spanish, French or Chinese (the
text corpus's languages but Japanese, whose kanji espeak-ng reads as character names),
stored at 16 kHz,
with a speaker drawn per clip (speed and pitch). Planted duplicates copy an earlier
original: `reencode` (to MP3 or Ogg Vorbis), `trim` (up to a tenth cut from each end),
`gain` (3 to 6 dB up or down) or `resample` (to 22.05 or 44.1 kHz). Bad files: `truncated`
(a WAV or FLAC cut in half), `empty` (no bytes), `not_audio` (text under an audio
extension), `absurd_header` (a WAV header claiming 0 channels) and `silent` (two seconds
of digital silence, which decodes but `audio_quality` drops).

The same arguments (and the same espeak-ng) give byte-identical files.

Example:
    >>> summary = generate_audio_corpus("/tmp/audio", samples=200, seed=1)  # doctest: +SKIP
    >>> read_audio_truth("/tmp/audio").kind.value_counts()["duplicate"]  # doctest: +SKIP
    31
"""

from __future__ import annotations

import io
import random
import struct
import tarfile
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from mixplane.errors import ConfigError
from mixplane.io.atomic import join_url, write_bytes
from mixplane.io.audio_codec import decode, encode, probe
from mixplane.stages.audio.resample import resample
from mixplane.synth.corpus import _prepare
from mixplane.synth.languages import LANGUAGES
from mixplane.synth.prose import sentences
from mixplane.synth.sinks import write_json

SHARD_DIR = "raw/webdataset"
TRUTH_FILE = "truth/audio.parquet"
SUMMARY_FILE = "truth/audio_summary.json"
PROGRESS_EVERY = 25
TRUTH_COLUMNS = (
    "doc_id", "sample_id", "kind", "language", "transcript", "format", "duplicate_of",
    "transform", "expected_reason",
)  # fmt: skip
TRUTH_SCHEMA = pa.schema([(name, pa.string()) for name in TRUTH_COLUMNS])
RATE = 16000  # espeak-ng speaks at 22,050 Hz; clips are stored at speech corpora's rate
SHARES = {"original": 0.76, "duplicate": 0.14, "bad": 0.10}
TRANSFORMS = ("reencode", "trim", "gain", "resample")
BAD_KINDS = {
    "truncated": "truncated_audio",
    "empty": "empty_audio",
    "not_audio": "corrupt_audio",
    "absurd_header": "corrupt_audio",
    "silent": "mostly_silent",
}
FORMATS = ("flac", "flac", "wav", "mp3", "ogg")
SPOKEN = ("de", "en", "es", "fr", "zh")  # the text corpus's languages espeak-ng speaks


@dataclass
class _Sample:
    sample_id: str
    kind: str
    language: str
    transcript: str
    ext: str
    data: bytes
    speaker: str
    duplicate_of: str | None = None
    transform: str | None = None
    expected_reason: str | None = None


@dataclass(frozen=True)
class AudioSynthSummary:
    """What an audio corpus holds, as in `truth/audio_summary.json`."""

    seed: int
    samples: int
    shards: int
    kinds: dict[str, int]
    transforms: dict[str, int]  # duplicates by how they were made, bad files by kind
    expected: dict[str, int]  # bad files by the exclusion they should get
    languages: dict[str, int]
    formats: dict[str, int]
    truth: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def generate_audio_corpus(
    out: str,
    samples: int = 200,
    seed: int = 0,
    *,
    per_shard: int = 100,
    overwrite: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> AudioSynthSummary:
    """Write `samples` clips under `out` and return what was written (the truth table is
    `read_audio_truth(out)`). An existing `raw/` or `truth/` is an error unless
    `overwrite`; `on_progress(done)` is called every few dozen clips.

    Example:
        >>> summary = generate_audio_corpus("/tmp/audio", 200, seed=1)  # doctest: +SKIP
        >>> summary.kinds["duplicate"]  # doctest: +SKIP
        31
    """
    from mixplane.synth.audio.speech import espeak_path, speak

    if samples < 0 or per_shard < 1:
        raise ConfigError(f"samples must be zero or more and per_shard one or more: {samples}")
    espeak_path()  # fail before writing anything when espeak-ng is missing
    _prepare(out, overwrite)
    rng = random.Random(seed)
    made: list[_Sample] = []
    originals: list[tuple[_Sample, np.ndarray]] = []
    for number in range(samples):
        sample_id = f"aud-{number:06d}"
        kind = _kind(rng, bool(originals))
        if kind == "original":
            sample, clip = _original(sample_id, rng, speak)
            originals.append((sample, clip))
        elif kind == "duplicate":
            sample = _duplicate(sample_id, rng, *originals[int(rng.random() * len(originals))])
        else:
            sample = _bad(sample_id, rng)
        made.append(sample)
        if on_progress is not None and (number + 1) % PROGRESS_EVERY == 0:
            on_progress(number + 1)
    shards = [made[i : i + per_shard] for i in range(0, len(made), per_shard)]
    rows = []
    for index, shard in enumerate(shards):
        name = f"shard-{index:05d}.tar"
        write_bytes(join_url(out, SHARD_DIR, name), _tar(shard))
        rows += [_truth_row(name, sample) for sample in shard]
    _write_truth(out, rows)
    if on_progress is not None:
        on_progress(samples)
    summary = _summarize(rows, seed, len(shards), join_url(out, TRUTH_FILE))
    write_json(join_url(out, SUMMARY_FILE), summary.to_dict())
    return summary


def read_audio_truth(out: str):
    """The corpus's truth table (pandas), one row per clip; see the module's docstring."""
    import pyarrow.parquet as pq

    return pq.read_table(join_url(out, TRUTH_FILE)).to_pandas()


def _summarize(rows: list[dict], seed: int, shards: int, truth: str) -> AudioSynthSummary:
    def count(key: str, kinds: tuple[str, ...] = ("original", "duplicate", "bad")) -> dict:
        found = Counter(row[key] for row in rows if row["kind"] in kinds and row[key])
        return dict(sorted(found.items()))

    return AudioSynthSummary(
        seed=seed,
        samples=len(rows),
        shards=shards,
        kinds=count("kind"),
        transforms=count("transform"),
        expected=count("expected_reason", ("bad",)),
        languages=count("language", ("original", "duplicate")),
        formats=count("format"),
        truth=truth,
    )


def _kind(rng: random.Random, have_originals: bool) -> str:
    draw = rng.random()
    if not have_originals or draw < SHARES["original"]:
        return "original"
    return "duplicate" if draw < SHARES["original"] + SHARES["duplicate"] else "bad"


def _original(sample_id: str, rng: random.Random, speak) -> tuple[_Sample, np.ndarray]:
    code = SPOKEN[int(rng.random() * len(SPOKEN))]
    language = LANGUAGES[code]
    text = language.join(sentences(language, rng, language.topic(rng), 1))
    speed, pitch = 140 + int(rng.random() * 60), 25 + int(rng.random() * 50)
    wav = speak(text, code, speed=speed, pitch=pitch)
    info = probe(wav)
    clip = resample(decode(wav, info), info.sample_rate, RATE, "HQ")
    ext = FORMATS[int(rng.random() * len(FORMATS))]
    sample = _Sample(sample_id, "original", code, text, ext, _encode(clip, RATE, ext), "")
    sample.speaker = f"s{speed}-{pitch}"
    return sample, clip


def _duplicate(sample_id: str, rng: random.Random, source: _Sample, clip: np.ndarray) -> _Sample:
    transform = TRANSFORMS[int(rng.random() * len(TRANSFORMS))]
    rate, ext = RATE, "flac"
    if transform == "reencode":
        ext = "mp3" if source.ext != "mp3" else "ogg"
    elif transform == "trim":
        cut = len(clip) // 10
        clip = clip[int(rng.random() * cut) : len(clip) - int(rng.random() * cut)]
    elif transform == "gain":
        decibels = (3 + rng.random() * 3) * (1 if rng.random() < 0.5 else -1)
        clip = np.clip(clip * 10 ** (decibels / 20), -1, 1).astype(np.float32)
    else:
        rate = 22050 if rng.random() < 0.5 else 44100
        clip = resample(clip, RATE, rate, "HQ")
    return _Sample(
        sample_id,
        "duplicate",
        source.language,
        source.transcript,
        ext,
        _encode(clip, rate, ext),
        source.speaker,
        duplicate_of=source.sample_id,
        transform=transform,
    )


def _bad(sample_id: str, rng: random.Random) -> _Sample:
    kinds = sorted(BAD_KINDS)
    kind = kinds[int(rng.random() * len(kinds))]
    # A tone with noise, so a cut FLAC still holds whole frames before the cut.
    noise = np.random.default_rng(int(rng.random() * 2**32)).standard_normal((2 * RATE, 1)) * 0.05
    tone = (np.sin(np.arange(2 * RATE) * 0.05)[:, None] * 0.3 + noise).astype(np.float32)
    ext = "wav"
    if kind == "truncated":
        ext = "flac" if rng.random() < 0.5 else "wav"
        whole = _encode(tone, RATE, ext)
        data = whole[: len(whole) // 2]
    elif kind == "empty":
        data = b""
    elif kind == "not_audio":
        ext, data = "flac", b"this is a caption file saved under an audio name\n" * 4
    elif kind == "absurd_header":
        whole = _encode(tone, RATE, "wav")
        data = whole[:22] + struct.pack("<H", 0) + whole[24:]  # 0 channels
    else:
        data = _encode(np.zeros((2 * RATE, 1), np.float32), RATE, "flac")
        ext = "flac"
    language = SPOKEN[int(rng.random() * len(SPOKEN))]
    return _Sample(
        sample_id, "bad", language, "", ext, data, "", transform=kind,
        expected_reason=BAD_KINDS[kind],
    )  # fmt: skip


def _encode(clip: np.ndarray, rate: int, ext: str) -> bytes:
    if ext in ("flac", "wav"):
        return encode(clip, rate, ext)
    import soundfile

    out = io.BytesIO()
    if ext == "mp3":
        soundfile.write(out, clip, rate, format="MP3", subtype="MPEG_LAYER_III")
    else:
        soundfile.write(out, clip, rate, format="OGG", subtype="VORBIS")
        return fixed_ogg_serial(out.getvalue())
    return out.getvalue()


def fixed_ogg_serial(data: bytes, serial: int = 1) -> bytes:
    """An Ogg file with its stream's serial number set to `serial` in every page (the CRC of
    each page recomputed): libsndfile draws the serial at random, which would make the
    corpus differ between runs.

    Example:
        >>> fixed_ogg_serial(b"")
        b''
    """
    out = bytearray(data)
    position = 0
    while position + 27 <= len(out) and out[position : position + 4] == b"OggS":
        segments = out[position + 26]
        size = 27 + segments + sum(out[position + 27 : position + 27 + segments])
        out[position + 14 : position + 18] = struct.pack("<I", serial)
        out[position + 22 : position + 26] = b"\0\0\0\0"
        crc = _ogg_crc(bytes(out[position : position + size]))
        out[position + 22 : position + 26] = struct.pack("<I", crc)
        position += size
    return bytes(out)


def _ogg_crc(page: bytes) -> int:
    """Ogg's page checksum: CRC-32, polynomial 0x04C11DB7, not reflected, starting at 0."""
    crc = 0
    for byte in page:
        crc = (crc << 8) ^ _OGG_TABLE[((crc >> 24) ^ byte) & 0xFF]
        crc &= 0xFFFFFFFF
    return crc


def _ogg_table() -> list[int]:
    table = []
    for index in range(256):
        value = index << 24
        for _ in range(8):
            value = ((value << 1) ^ 0x04C11DB7) if value & 0x80000000 else value << 1
        table.append(value & 0xFFFFFFFF)
    return table


_OGG_TABLE = _ogg_table()


def _tar(samples: list[_Sample]) -> bytes:
    """A tar with fixed metadata (no times, owners or modes from this machine)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for sample in samples:
            key = sample.sample_id[-6:]
            meta = {"sample_id": sample.sample_id, "language": sample.language}
            meta["speaker"] = sample.speaker
            members = [
                (f"{key}.{sample.ext}", sample.data),
                (f"{key}.json", orjson.dumps(meta, option=orjson.OPT_SORT_KEYS)),
                (f"{key}.txt", sample.transcript.encode()),
            ]
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _truth_row(shard: str, sample: _Sample) -> dict:
    return {
        "doc_id": f"{shard}/{sample.sample_id[-6:]}",
        "sample_id": sample.sample_id,
        "kind": sample.kind,
        "language": sample.language,
        "transcript": sample.transcript,
        "format": sample.ext,
        "duplicate_of": sample.duplicate_of,
        "transform": sample.transform,
        "expected_reason": sample.expected_reason,
    }


def _write_truth(out: str, rows: list[dict]) -> None:
    import pyarrow.parquet as pq

    columns = {name: [row[name] for row in rows] for name in TRUTH_COLUMNS}
    sink = io.BytesIO()
    pq.write_table(pa.table(columns, schema=TRUTH_SCHEMA), sink)
    write_bytes(join_url(out, TRUTH_FILE), sink.getvalue())
