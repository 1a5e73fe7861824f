"""Read the same WARC files with warcio, FastWARC and mixplane's reader, paired round by round.

    .venv/bin/python bench/io/warc.py --docs 20000 --rounds 5
    .venv/bin/python bench/io/warc.py --baseline-src BEFORE/src   # also the reader before

The files are the synthetic corpus's web WARCs in its `realistic` profile (20-200 KB pages
with boilerplate, several charsets; `mixplane.synth.webdress`), gzipped per record as
crawls ship them, and the same records uncompressed. Tools, each a fresh process reading
every file once:

- `warcio`, `fastwarc`: the library alone, iterating the records and reading the payload of
  every response, resource and conversion record (the floor of any reader on it);
- `mixplane`: `mixplane.io.readers.warc.read`, the whole job: framing checks, HTTP headers,
  charset (header, meta, detection), decoding, a Document per record;
- `mixplane-baseline` (with `--baseline-src DIR`): the same reader from another source tree
  (the warcio reader before FastWARC, say).

Wall and CPU seconds (user + system, process tree) per run; each round runs every tool on
each format in a rotating order, and ratios are paired within a round. The results file
(`bench/results/warc-read.json`) holds every run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from measure import measure  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TOOLS = ("warcio", "fastwarc", "mixplane", "mixplane-baseline")
FORMATS = ("gzip", "plain")

WARCIO = """
import json, sys
from warcio.archiveiterator import ArchiveIterator
records = size = 0
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle):
            if record.rec_type in ("response", "resource", "conversion"):
                size += len(record.content_stream().read())
                records += 1
print(json.dumps({"records": records, "payload_bytes": size}))
"""
FASTWARC = """
import json, sys
from fastwarc.warc import ArchiveIterator, WarcRecordType as T
records = size = 0
for path in sys.argv[1:]:
    with open(path, "rb") as handle:
        for record in ArchiveIterator(handle, record_types=T.response | T.resource | T.conversion):
            size += len(record.reader.read())
            records += 1
print(json.dumps({"records": records, "payload_bytes": size}))
"""
MIXPLANE = """
import json, sys
from mixplane.document import Document
from mixplane.io.readers import ReadOptions, ReadStats, Shard, reader_for
records = quarantined = 0
stats = ReadStats()
for path in sys.argv[1:]:
    for item in reader_for("warc")(Shard(path, path, "warc"), ReadOptions(), stats):
        if isinstance(item, Document):
            records += 1
        else:
            quarantined += 1
print(json.dumps({"records": records, "payload_bytes": stats.bytes, "quarantined": quarantined}))
"""
SCRIPTS = {"warcio": WARCIO, "fastwarc": FASTWARC, "mixplane": MIXPLANE}


def make_files(data: Path, docs: int, seed: int) -> dict[str, list[Path]]:
    """The realistic corpus's web WARCs, and the same records uncompressed."""
    corpus = data / f"corpus-{docs}-{seed}"
    if not (corpus / "truth" / "summary.json").exists():
        from mixplane.synth import generate_corpus

        print(f"writing corpus to {corpus}", file=sys.stderr)
        generate_corpus(str(corpus), docs, seed, overwrite=True, web_profile="realistic")
    packed = sorted((corpus / "raw" / "web").glob("*.warc.gz"))
    plain_folder = data / f"plain-{docs}-{seed}"
    plain_folder.mkdir(parents=True, exist_ok=True)
    plain = []
    for path in packed:
        target = plain_folder / path.name.removesuffix(".gz")
        if not target.exists():
            target.write_bytes(gzip.decompress(path.read_bytes()))
        plain.append(target)
    return {"gzip": packed, "plain": plain}


def run_tool(tool: str, files: list[Path], baseline: Path | None) -> dict:
    env = dict(os.environ)
    script = SCRIPTS["mixplane" if tool == "mixplane-baseline" else tool]
    if tool == "mixplane-baseline":
        env["PYTHONPATH"] = str(baseline)
    result = measure([sys.executable, "-c", script, *map(str, files)], env=env, tree_cpu=True)
    if result.returncode:
        raise SystemExit(f"{tool} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout) | {
        "seconds": result.seconds,
        "cpu_seconds": result.cpu_seconds,
    }


def summarize(runs: list[dict], sizes: dict[str, int]) -> list[dict]:
    """Per tool and format: median (min-max) records/s, MB/s, CPU seconds; paired ratios."""
    rows = []
    for fmt in sorted({r["format"] for r in runs}):
        for tool in TOOLS:
            mine = [r for r in runs if r["tool"] == tool and r["format"] == fmt]
            if not mine:
                continue
            rows.append(
                {
                    "format": fmt,
                    "tool": tool,
                    "records": mine[0]["records"],
                    "records_per_s": _spread([r["records"] / r["seconds"] for r in mine]),
                    "file_mb_per_s": _spread([sizes[fmt] / 1e6 / r["seconds"] for r in mine]),
                    "payload_mb_per_s": _spread(
                        [r["payload_bytes"] / 1e6 / r["seconds"] for r in mine]
                    ),
                    "cpu_seconds": _spread([r["cpu_seconds"] for r in mine]),
                    "seconds": _spread([r["seconds"] for r in mine]),
                }
            )
    return rows


def paired(runs: list[dict], ours: str, theirs: str, fmt: str) -> list[float]:
    """CPU seconds of `ours` over `theirs`, round by round."""
    by_round = {}
    for run in runs:
        if run["format"] == fmt and run["tool"] in (ours, theirs):
            by_round.setdefault(run["round"], {})[run["tool"]] = run["cpu_seconds"]
    return [r[ours] / r[theirs] for r in by_round.values() if len(r) == 2]


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=20000, help="documents of the corpus")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--baseline-src", type=Path, help="source tree of mixplane-baseline")
    parser.add_argument("--data", type=Path, default=HERE.parent / "data" / "warc")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results" / "warc-read.json")
    args = parser.parse_args()
    files = make_files(args.data, args.docs, args.seed)
    sizes = {fmt: sum(p.stat().st_size for p in files[fmt]) for fmt in FORMATS}
    tools = [t for t in TOOLS if t != "mixplane-baseline" or args.baseline_src]
    runs = []
    for round_number in range(args.rounds):
        order = [(fmt, tool) for fmt in args.formats for tool in tools]
        shift = round_number % len(order)
        for fmt, tool in order[shift:] + order[:shift]:
            run = run_tool(tool, files[fmt], args.baseline_src)
            runs.append(run | {"round": round_number, "tool": tool, "format": fmt})
            print(json.dumps(runs[-1]), file=sys.stderr)
    rows = summarize(runs, sizes)
    ratios = {
        f"{ours}/{theirs} {fmt}": _spread(values)
        for fmt in args.formats
        for ours, theirs in (
            ("fastwarc", "warcio"),
            ("mixplane", "warcio"),
            ("mixplane", "mixplane-baseline"),
        )
        if (values := paired(runs, ours, theirs, fmt))
    }
    data = args.data.relative_to(ROOT) if args.data.is_relative_to(ROOT) else Path(args.data.name)
    settings = vars(args) | {
        "data": str(data),
        "out": None,
        "baseline_src": args.baseline_src and "BEFORE/src",
        "files": {fmt: len(files[fmt]) for fmt in FORMATS},
        "file_bytes": sizes,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }
    report = {"settings": settings, "rows": rows, "cpu_ratios_paired": ratios, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print("| format | tool | records/s | file MB/s | payload MB/s | CPU s |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        cells = [
            _cell(row[k])
            for k in ("records_per_s", "file_mb_per_s", "payload_mb_per_s", "cpu_seconds")
        ]
        print(f"| {row['format']} | {row['tool']} | " + " | ".join(cells) + " |")
    for name, spread in ratios.items():
        print(f"{name} CPU (paired): {_cell(spread, 2)}x")


def _cell(spread: dict[str, float], digits: int = 1) -> str:
    return f"{spread['median']:.{digits}f} ({spread['min']:.{digits}f}-{spread['max']:.{digits}f})"


if __name__ == "__main__":
    main()
