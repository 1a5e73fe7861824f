"""What a mixture's first steps read, as the view `documents`: each document read with the
tokens taken from it (summed over its pieces, or its rows in padded batches), joined with
its shard's metadata.

Example:
    >>> reads = mixture_reads(connection, dataset, versions, 800)  # doctest: +SKIP
    >>> reads["sequences"]  # doctest: +SKIP
    800
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from mixplane.catalog.registry import DatasetVersion
from mixplane.load.dataset import MixtureDataset
from mixplane.load.tools.taken import tokens_taken
from mixplane.load.unpacked.dataset import UnpackedDataset
from mixplane.load.unpacked.forensics import documents_taken


def mixture_reads(
    connection: duckdb.DuckDBPyConnection,
    dataset: MixtureDataset,
    versions: Sequence[DatasetVersion],
    sequences: int,
) -> dict[str, Any]:
    """Create `documents` on `connection` (which has `all_documents` over `versions`) for
    the first `sequences` of the stream; returns what was read (sequences, tokens per
    sequence, document pieces)."""
    blocks = tokens_taken(dataset, sequences)
    pieces = _create_documents(connection, dataset.resolved, versions, blocks)
    return {"sequences": sequences, "seq_len": dataset.spec.seq_len, "pieces": pieces}


def unpacked_reads(
    connection: duckdb.DuckDBPyConnection,
    dataset: UnpackedDataset,
    versions: Sequence[DatasetVersion],
    steps: int,
) -> dict[str, Any]:
    """`mixture_reads` for a mixture of whole documents in padded batches (`packing:
    none`): what the first `steps` steps' rows held, padding not counted."""
    pieces = _create_documents(
        connection, dataset.resolved, versions, documents_taken(dataset, steps)
    )
    return {"rows": pieces, "seq_len": dataset.spec.seq_len, "packing": "none"}


def _create_documents(
    connection: duckdb.DuckDBPyConnection,
    resolved: Any,
    versions: Sequence[DatasetVersion],
    blocks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> int:
    """Create the view `documents`: each document read, with the tokens taken from it
    summed over `blocks` of `(shard number, row, tokens)`; returns how many pieces."""
    by_uri = {version.uri: version for version in versions}
    numbers, refs, shards = [], [], []
    for number, (uri, stem) in enumerate(resolved.shards):
        version = by_uri[uri]
        numbers.append(number)
        refs.append(version.ref)
        shards.append(version.stems.index(stem))
    connection.register(
        "shard_numbers", pa.table({"number": numbers, "dataset": refs, "shard": shards})
    )
    # Summed per document within each block first: a document cut over many sequences
    # of a block takes one row, not one a piece.
    connection.execute("CREATE TABLE pieces (number BIGINT, row BIGINT, tokens BIGINT)")
    pieces = 0
    for shard, row, tokens in blocks:
        connection.register("block", pa.table({"number": shard, "row": row, "tokens": tokens}))
        connection.execute(
            "INSERT INTO pieces SELECT number, row, sum(tokens) FROM block GROUP BY ALL"
        )
        connection.unregister("block")
        pieces += len(tokens)
    connection.execute(
        "CREATE TABLE taken AS SELECT s.dataset, s.shard, p.row, sum(p.tokens) AS tokens "
        "FROM pieces p JOIN shard_numbers s USING (number) GROUP BY ALL"
    )
    connection.execute("DROP TABLE pieces")
    connection.execute(
        "CREATE VIEW documents AS SELECT d.*, t.tokens FROM taken t "
        "JOIN all_documents d USING (dataset, shard, row)"
    )
    return pieces
