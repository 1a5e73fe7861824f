"""Documents per second per core of the filter chain, ours against datatrove's, same run.

    .venv/bin/python bench/filters/throughput.py [--docs 2000] [--profile]

Both chains run on the same documents (bench/filters/corpus.py), one process each (our
word-split caches emptied before each chain), after a warm-up on 50 documents that loads
models and tokenizers, and are timed in CPU seconds of that process
(so "per core"). Two chains are compared:

- filters: the four quality filters (gopher_repetition, gopher_quality, c4, fineweb), in
  FineWeb's order, against datatrove's GopherRepetition, GopherQuality, C4Quality and
  FineWebQuality filters.
- full: normalize, langid, the four filters and pii (those of our stages that exist)
  against datatrove's FTFYFormatter, the four filters and PIIFormatter. datatrove's language
  filter needs a fastText model downloaded at run time, which this machine cannot do, so
  its chain has no language identification: that handicaps ours.

--profile prints our hottest functions (cProfile) for the filters chain.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.filters.corpus import build_corpus  # noqa: E402
from bench.peer_venv import ensure_venv  # noqa: E402
from mixplane.document import Document  # noqa: E402
from mixplane.stages.build import build_stage  # noqa: E402
from mixplane.stages.text import clear_caches  # noqa: E402

DATA = ROOT / "bench" / "data" / "filters"
PEER_PACKAGES = ["datatrove", "spacy", "regex", "ftfy"]
FILTERS = ["gopher_repetition", "gopher_quality", "c4", "fineweb"]
CHAINS = {"filters": FILTERS, "full": ["normalize", "langid", *FILTERS, "pii"]}
BATCH = 512


def build_chain(names: list[str]) -> tuple[list, list[str]]:
    """Our stages for `names`, skipping those not available; returns (stages, names run)."""
    stages, used = [], []
    for name in names:
        try:
            stage = build_stage(name, {})
        except Exception as error:  # a stage another part of the project has not built yet
            print(f"skipping {name}: {error}", file=sys.stderr)
            continue
        stage.setup()
        stages.append(stage)
        used.append(name)
    return stages, used


def run_ours(stages: list, docs: list[dict]) -> tuple[float, int]:
    """CPU seconds to push all documents through the stages in batches; documents kept."""
    kept = 0
    started = time.process_time()
    for start in range(0, len(docs), BATCH):
        batch = [Document(d["id"], d["text"], "bench") for d in docs[start : start + BATCH]]
        for stage in stages:
            batch = [r for r in stage.apply_batch(batch) if isinstance(r, Document)]
        kept += len(batch)
    return time.process_time() - started, kept


def run_peer(python: str, chain: str, docs_path: Path) -> dict:
    out = DATA / f"throughput-datatrove-{chain}.jsonl"
    runner = Path(__file__).with_name("datatrove_runner.py")
    subprocess.run([python, str(runner), f"chain_{chain}", str(docs_path), str(out)], check=True)
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    docs = build_corpus(args.docs, seed=args.seed)
    docs_path = DATA / "throughput-docs.jsonl"
    docs_path.parent.mkdir(parents=True, exist_ok=True)
    docs_path.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    python = ensure_venv("datatrove", PEER_PACKAGES)

    rows = []
    for chain, names in CHAINS.items():
        stages, used = build_chain(names)
        clear_caches()  # each chain starts cold, like datatrove's fresh process
        run_ours(stages, docs[:50])  # warm-up: first calls, lazy imports
        if args.profile and chain == "filters":
            profiler = cProfile.Profile()
            profiler.enable()
        ours_seconds, ours_kept = run_ours(stages, docs)
        if args.profile and chain == "filters":
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
        peer = run_peer(python, chain, docs_path)
        ours_rate = len(docs) / ours_seconds
        peer_rate = len(docs) / peer["seconds"]
        rows.append((chain, " → ".join(used), ours_rate, ours_kept, peer_rate, peer["kept"]))

    print(f"\n{len(docs)} documents, CPU time of one process each\n")
    print("| chain | our stages | ours docs/s/core | datatrove docs/s/core | speed-up | kept |")
    print("| --- | --- | --- | --- | --- | --- |")
    for chain, used, ours_rate, ours_kept, peer_rate, peer_kept in rows:
        print(
            f"| {chain} | {used} | {ours_rate:,.0f} | {peer_rate:,.0f} | "
            f"{ours_rate / peer_rate:.1f}x | {ours_kept} vs {peer_kept} |"
        )


if __name__ == "__main__":
    main()
