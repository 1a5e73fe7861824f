"""Runs inside the datatrove virtual environment (started by agreement.py and throughput.py).

Usage: python datatrove_runner.py MODE DOCS.jsonl OUT.jsonl
  words:     datatrove's word split and sentence count of each document
  filters:   keep/drop and reason of each of the four quality filters, run independently
  chain_filters: the four filters chained (FineWeb's order), timed in CPU seconds
  chain_full:    FTFY normalization, the four filters and PII redaction, timed
"""

from __future__ import annotations

import json
import sys
import time


def _read(path):
    from datatrove.data import Document

    with open(path) as handle:
        rows = [json.loads(line) for line in handle]
    return [Document(text=row["text"], id=row["id"]) for row in rows]


def _filters():
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    return {
        "gopher_quality": GopherQualityFilter(),
        "gopher_repetition": GopherRepetitionFilter(),
        "c4": C4QualityFilter(),
        "fineweb": FineWebQualityFilter(),
    }


def words(docs, out):
    from datatrove.utils.text import split_into_sentences, split_into_words

    for doc in docs:
        lines = [line.strip() for line in doc.text.splitlines() if line.strip()]
        row = {
            "id": doc.id,
            "words": split_into_words(doc.text, "en"),
            "sentences": [len(split_into_sentences(line, "en")) for line in lines],
        }
        out.write(json.dumps(row) + "\n")


def filters(docs, out):
    from datatrove.data import Document

    steps = _filters()
    for doc in docs:
        row = {"id": doc.id}
        for name, step in steps.items():
            copy = Document(text=doc.text, id=doc.id)
            result = step.filter(copy)
            keep, reason = (result, None) if isinstance(result, bool) else result
            row[name] = {"keep": bool(keep), "reason": reason}
        out.write(json.dumps(row) + "\n")


def _chain(docs, out, full: bool):
    from datatrove.data import Document
    from datatrove.pipeline.formatters import FTFYFormatter, PIIFormatter
    from datatrove.utils.text import split_into_sentences, split_into_words

    # Warm-up: load the tokenizer before timing, as the chain would in a long run.
    split_into_words("Warm up the tokenizer.", "en")
    split_into_sentences("Warm up. The sentencizer.", "en")
    steps = _filters()
    ordered = [steps["gopher_repetition"], steps["gopher_quality"], steps["c4"], steps["fineweb"]]
    if full:
        ordered = [FTFYFormatter(), *ordered, PIIFormatter()]
    warm = [Document(text=doc.text, id=doc.id) for doc in docs[:50]]
    for step in ordered:
        warm = list(step.run(iter(warm)))
    started = time.process_time()
    stream = iter(docs)
    for step in ordered:
        stream = step.run(stream)
    kept = sum(1 for _ in stream)
    seconds = time.process_time() - started
    out.write(json.dumps({"documents": len(docs), "kept": kept, "seconds": seconds}) + "\n")


def chain_filters(docs, out):
    _chain(docs, out, full=False)


def chain_full(docs, out):
    _chain(docs, out, full=True)


def main() -> None:
    mode, source, target = sys.argv[1:4]
    docs = _read(source)
    with open(target, "w") as out:
        modes = {
            "words": words,
            "filters": filters,
            "chain_filters": chain_filters,
            "chain_full": chain_full,
        }
        modes[mode](docs, out)


if __name__ == "__main__":
    main()
