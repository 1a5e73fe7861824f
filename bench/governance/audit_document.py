"""`mixplane audit --document`: how long finding where a run read a document takes, against
reading the run's batches (with `document_refs`) to find it, the way one would without the
pure order.

    .venv/bin/python bench/governance/audit_document.py [--documents 200000] [--sequences 200000]

Writes a synthetic catalog of two datasets, records a run of two ranks that read
`--sequences` global positions (its start events as a loader writes them, and a stop at that
position), then times `DocumentAudit` (opening: the trail read and the run's order rebuilt;
then per document) over documents picked at random, and reading the same positions' batches
with `document_refs` for comparison. The answers are checked equal for the documents timed.

Results go to bench/results/audit-document-DOCUMENTS.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mixplane.catalog import Catalog  # noqa: E402
from mixplane.load import MixtureDataset  # noqa: E402
from mixplane.load.tools.document_audit import DocumentAudit  # noqa: E402
from mixplane.load.tools.synthetic import write_catalog  # noqa: E402
from mixplane.store.dataset import TokenizedDataset  # noqa: E402

SEQ_LEN = 1024
BATCH = 64
ASKED = 20  # documents timed


def measure(documents: int, sequences: int, work: Path) -> dict:
    half = documents // 2
    catalog = write_catalog(
        str(work),
        {
            "wiki": {"documents": half, "seed": 1, "source": "wiki", "mean_tokens": 400},
            "web": {"documents": half, "seed": 2, "source": "web", "mean_tokens": 300},
        },
    )
    spec = {
        "catalog": catalog,
        "seq_len": SEQ_LEN,
        "eos_id": 0,
        "global_batch_size": 2 * BATCH,
        "run_id": "bench",
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.6},
            "web": {"where": "source = 'web'", "weight": 0.4},
        },
    }
    ranks = [MixtureDataset(spec, rank=r, world_size=2, prefetch=0) for r in range(2)]
    for dataset in ranks:  # the run read `sequences` positions, then stopped
        dataset.trail.stop(sequences, {"weight_changes": []})
    names = ids_of(catalog, "wiki@1")
    rng = np.random.default_rng(0)
    asked = [names[i] for i in rng.choice(len(names), ASKED, replace=False)]

    started = time.perf_counter()
    audit = DocumentAudit(catalog)
    opened = time.perf_counter() - started
    started = time.perf_counter()
    answers = {name: audit.reads(name)["runs"][0]["reads"] for name in asked}
    per_document = (time.perf_counter() - started) / ASKED
    audit.close()

    # Without the order: read every batch the run read, with each token's document.
    plain = MixtureDataset(spec | {"document_refs": True}, prefetch=0, audit=False)
    wiki = [info["dataset"] for info in plain.resolved.datasets].index("wiki@1")
    wanted = {names.index(name): name for name in asked}
    found: dict[str, set[int]] = {name: set() for name in asked}
    started = time.perf_counter()
    for first in range(0, sequences, 2 * BATCH):
        positions = np.arange(first, min(first + 2 * BATCH, sequences))
        refs = plain.read_positions(positions)["document_refs"]
        for row, position in enumerate(positions.tolist()):
            for number in np.unique(refs[row][refs[row][:, 0] == wiki][:, 1]).tolist():
                if number in wanted:
                    found[wanted[number]].add(position)
    scan = time.perf_counter() - started
    plain.close()
    for name in asked:
        assert {read["position"] for read in answers[name]} == found[name], name
    return {
        "documents": documents,
        "sequences_read": sequences,
        "seq_len": SEQ_LEN,
        "open_seconds": round(opened, 3),
        "per_document_seconds": round(per_document, 4),
        "scan_seconds": round(scan, 2),
        "scan_over_one_document": round(scan / (opened + per_document), 1),
        "documents_found_read": sum(bool(found[name]) for name in asked),
        "documents_asked": ASKED,
    }


def ids_of(catalog: str, ref: str) -> list[str]:
    import pyarrow.parquet as pq

    version = Catalog(catalog).get(ref)
    names: list[str] = []
    for url in TokenizedDataset(version.uri).meta_urls():
        names += pq.read_table(url, columns=["id"]).column("id").to_pylist()
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200_000)
    parser.add_argument("--sequences", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        result = measure(args.documents, args.sequences, Path(folder))
    out = ROOT / "bench" / "results" / f"audit-document-{args.documents}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
