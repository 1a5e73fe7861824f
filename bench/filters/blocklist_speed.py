"""Speed of the `wordlist` block-list stage against the plain alternation regex C4 used.

    .venv/bin/python bench/filters/blocklist_speed.py [--docs 3000] [--seed 0]

Documents from bench/filters/corpus.py (documentation sections and synthetic web text),
all tagged English; one in ten gets a term of the shipped LDNOOBW English list (403 terms)
inserted at a random word boundary, so the run has both clean scans and hits. Three ways
to decide C4's rule (drop a document containing any listed term) are timed in CPU seconds
of this process, after a warm-up:

- C4's regex: every term escaped and joined with "|", flanked by `(?:\\W|^)` and
  `(?:\\W|$)`, searched in the lowercased text (C4's own construction);
- ours, matcher only: the prefix-tree pattern of `term_match.TermMatcher`, all matches;
- ours, the stage: `wordlist` with `builtin: [ldnoobw/en]` in filter mode (the matcher,
  the ratio for documents with a hit, the signals and the Drop).

It prints documents and megabytes per second per core, how many documents each way drops,
and on how many it decides otherwise than C4's regex (they can differ where C4's `\\W`
counts a combining mark as a boundary or its lowercasing misses a case-folded form).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.filters.corpus import build_corpus  # noqa: E402
from mixplane.document import Document, Drop  # noqa: E402
from mixplane.stages.build import build_stage  # noqa: E402


def corpus(count: int, seed: int, terms: list[str]) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for doc in build_corpus(count, seed=seed):
        text = doc["text"]
        if rng.random() < 0.1:
            spaces = [m.start() for m in re.finditer(" ", text)] or [len(text)]
            at = rng.choice(spaces)
            text = f"{text[:at]} {rng.choice(terms)} {text[at:]}"
        texts.append(text)
    return texts


def timed(decide, texts: list[str]) -> tuple[float, list[bool]]:
    for text in texts[:50]:
        decide(text)
    start = time.process_time()
    dropped = [bool(decide(text)) for text in texts]
    return time.process_time() - start, dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    stage = build_stage("wordlist", {"builtin": ["ldnoobw/en"]})
    terms = [term.text for term in stage.terms()]
    texts = corpus(args.docs, args.seed, terms)
    megabytes = sum(len(text.encode()) for text in texts) / 1e6

    c4 = re.compile(r"(?:\W|^)({})(?:\W|$)".format("|".join(re.escape(t) for t in terms)))
    matcher = stage.matcher("en")
    ways = {
        "C4's regex": lambda text: c4.search(text.lower()) is not None,
        "ours, matcher only": lambda text: bool(matcher.find(text)),
        "ours, wordlist stage": lambda text: isinstance(
            stage.apply(Document("d", text, "web", {"language": "en"})), Drop
        ),
    }
    print(f"{len(texts)} documents, {megabytes:.1f} MB, {len(terms)} terms")
    print("| way | docs/s/core | MB/s/core | dropped | decisions unlike C4's |")
    print("| --- | --- | --- | --- | --- |")
    reference = None
    for name, decide in ways.items():
        seconds, dropped = timed(decide, texts)
        reference = dropped if reference is None else reference
        differ = sum(a != b for a, b in zip(dropped, reference, strict=True))
        rate = f"{len(texts) / seconds:,.0f} | {megabytes / seconds:.1f}"
        print(f"| {name} | {rate} | {sum(dropped)} | {differ} |")


if __name__ == "__main__":
    main()
