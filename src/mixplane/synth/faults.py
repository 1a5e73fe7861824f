"""Broken input files, to check that the pipeline quarantines exactly what is bad.

They are extra files next to the clean ones (the clean files are the same with or without
faults) and hold their own documents, which the corpus's document count does not include:

- `raw/wiki/wiki-faulty.jsonl`: good records mixed with malformed JSON, a line that is not
  valid UTF-8, a record without its text field, a JSON array, a text that is a number, and
  a blank line (which is not a record).
- `raw/wiki/empty.jsonl`: an empty file (no records at all).
- `raw/wiki/wiki-truncated.jsonl.zst`: zstd frames of a few records each; the last frame is
  cut in half, so the complete frames read back and the cut one is one unreadable record.
- `raw/web/web-truncated.warc.gz`: complete WARC records, then one cut inside its payload.

`truth/faults.json` records, per file, how many records are bad (should be quarantined),
how many are good (should be read), and for truncated files how many were cut away.
"""

from __future__ import annotations

import io
import random
from typing import Any

import orjson
import zstandard

from mixplane.io.atomic import atomic_open, join_url
from mixplane.synth.documents import make_sites, web_draft, wiki_draft
from mixplane.synth.layout import record_uuid
from mixplane.synth.sinks import ZSTD_LEVEL, WarcSink

FAULTY_GOOD = 30
TRUNCATED_FRAMES = 6
RECORDS_PER_FRAME = 4
WARC_GOOD = 12
WARC_CUT_MIN_BYTES = 6000
BAD_LINES = (
    ("invalid_json", b'{"id": "wiki-fault-unterminated", "text": "the string never ends}\n'),
    ("invalid_json", b'{"id": "wiki-fault-bare-key", text: "keys need quotes"}\n'),
    ("invalid_utf8", b'{"id": "wiki-fault-latin1", "text": "caf\xe9 au lait"}\n'),
    ("missing_text", b'{"id": "wiki-fault-no-text", "title": "No text", "lang": "en"}\n'),
    ("not_an_object", b'["wiki-fault-array", "a list is not a record"]\n'),
    ("text_not_a_string", b'{"id": "wiki-fault-number", "text": 42}\n'),
)


def _wiki_line(rng: random.Random, number: int) -> bytes:
    draft = wiki_draft(rng)
    record = {"id": f"wiki-fault-{number:05d}", "text": draft.text, **draft.fields}
    return orjson.dumps(record) + b"\n"


def faulty_jsonl(rng: random.Random) -> tuple[bytes, dict[str, Any]]:
    """Good lines with the bad ones spread among them, plus one blank line."""
    lines = [_wiki_line(rng, i) for i in range(FAULTY_GOOD)]
    problems: dict[str, int] = {}
    for index, (problem, line) in enumerate(BAD_LINES):
        lines.insert(3 + index * 5, line)
        problems[problem] = problems.get(problem, 0) + 1
    lines.insert(len(lines) // 2, b"\n")
    info = {"bad_records": len(BAD_LINES), "good_records": FAULTY_GOOD, "problems": problems}
    return b"".join(lines), info


def truncated_zstd(rng: random.Random, offset: int) -> tuple[bytes, dict[str, Any]]:
    """Independent zstd frames of `RECORDS_PER_FRAME` lines; the last one cut in half."""
    compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    frames = []
    for frame in range(TRUNCATED_FRAMES):
        lines = [
            _wiki_line(rng, offset + frame * RECORDS_PER_FRAME + i)
            for i in range(RECORDS_PER_FRAME)
        ]
        frames.append(compressor.compress(b"".join(lines)))
    last = frames.pop()
    data = b"".join(frames) + last[: len(last) // 2]
    info = {
        "bad_records": 1,
        "good_records": len(frames) * RECORDS_PER_FRAME,
        "cut_records": RECORDS_PER_FRAME,
        "problems": {"truncated_stream": 1},
    }
    return data, info


def truncated_warc(rng: random.Random) -> tuple[bytes, dict[str, Any]]:
    """`WARC_GOOD` complete response records, then one cut in the middle of its payload."""
    sites = make_sites(rng)
    buffer = io.BytesIO()
    sink = WarcSink("web-truncated.warc.gz", record_uuid(rng), "2024-01-01T00:00:00Z", buffer)
    drafts = [web_draft(rng, sites, number) for number in range(WARC_GOOD)]
    # The record to cut is a long page, so two thirds into it is well inside the payload.
    last = web_draft(rng, sites, WARC_GOOD)
    while len(last.text) < WARC_CUT_MIN_BYTES:
        last = web_draft(rng, sites, WARC_GOOD)
    for draft in [*drafts, last]:
        sink.write(record_uuid(rng), draft.fields["url"], "2024-01-02T03:04:05Z", draft.text)
    sink.close()
    data = buffer.getvalue()
    start = sink.offsets[-1]
    cut = start + (len(data) - start) * 2 // 3
    info = {
        "bad_records": 1,
        "good_records": WARC_GOOD,
        "problems": {"truncated_record": 1},
    }
    return data[:cut], info


def write_faults(out: str, seed: int) -> dict[str, Any]:
    """Write the fault files under `out/raw` and return what `truth/faults.json` holds."""
    rng = random.Random(f"mixplane-synth-faults:{seed}")
    files: dict[str, dict[str, Any]] = {}
    faulty, files["raw/wiki/wiki-faulty.jsonl"] = faulty_jsonl(rng)
    truncated, files["raw/wiki/wiki-truncated.jsonl.zst"] = truncated_zstd(rng, FAULTY_GOOD)
    warc, files["raw/web/web-truncated.warc.gz"] = truncated_warc(rng)
    files["raw/wiki/empty.jsonl"] = {"bad_records": 0, "good_records": 0, "problems": {}}
    contents = {
        "raw/wiki/wiki-faulty.jsonl": faulty,
        "raw/wiki/wiki-truncated.jsonl.zst": truncated,
        "raw/web/web-truncated.warc.gz": warc,
        "raw/wiki/empty.jsonl": b"",
    }
    for name, data in contents.items():
        with atomic_open(join_url(out, name)) as handle:
            handle.write(data)
    return {
        "files": dict(sorted(files.items())),
        "bad_records": sum(f["bad_records"] for f in files.values()),
        "good_records": sum(f["good_records"] for f in files.values()),
    }
