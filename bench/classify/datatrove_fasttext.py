"""Runs inside the datatrove virtual environment (started by fasttext_speed.py).

Usage: python datatrove_fasttext.py MODEL.bin DOCS.jsonl OUT.json

Scores every document with datatrove's FastTextClassifierFilter (newlines replaced by
spaces), keeping every document: `remove_labels` at a score no probability reaches
(datatrove 0.10.1 fails to load a model given neither keep nor remove labels). After a
warm-up on 50 documents that loads the model, it writes the CPU seconds of the scoring and
each document's score of label `hq`.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    from datatrove.data import Document
    from datatrove.pipeline.filters import FastTextClassifierFilter

    model, source, target = sys.argv[1:4]
    with open(source) as handle:
        rows = [json.loads(line) for line in handle]
    step = FastTextClassifierFilter(model, remove_labels=[("hq", 2.0)], newline_replacement=" ")
    warm = [Document(text=row["text"], id=row["id"]) for row in rows[:50]]
    for _ in step.run(iter(warm)):
        pass
    docs = [Document(text=row["text"], id=row["id"]) for row in rows]
    started = time.process_time()
    kept = list(step.run(iter(docs)))
    seconds = time.process_time() - started
    scores = {doc.id: doc.metadata.get("__label__hq", 0.0) for doc in kept}
    with open(target, "w") as out:
        json.dump({"seconds": seconds, "documents": len(docs), "scores": scores}, out)


if __name__ == "__main__":
    main()
