"""Writing a shard without some of its documents, and carrying untouched files over.

A rewritten shard goes through the store's own shard writer, so its `.bin`, `.idx`,
`.sums`, `.mask` and `.meta.parquet` are exactly what `mixplane tokenize` would write for
the documents that remain. A file that does not change is carried into the new folder
without being rewritten: a hard link on a local disk (a copy across filesystems), a
server-side copy on object storage; its bytes, and so its hash, are the old ones.

Example:
    >>> record = filter_shard(reader, meta, np.array([3, 9]), "web-takedown-2")  # doctest: +SKIP
    >>> record.documents  # doctest: +SKIP
    118
"""

from __future__ import annotations

import errno
import io
import os
import shutil
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from mixplane.catalog.columns import ColumnFile
from mixplane.errors import ConfigError
from mixplane.io.atomic import is_local, local_path, write_bytes
from mixplane.io.urls import url_filesystem
from mixplane.store.format import parse_stem
from mixplane.store.reader import ShardReader
from mixplane.store.writer import META_ROW_GROUP, ShardRecord, _OpenShard

# Errors of `os.link` after which a copy is made instead: another filesystem, or one
# without hard links.
NO_LINK = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}


def carry_file(source: str, target: str, storage_options: dict[str, Any] | None) -> None:
    """Put `source`'s bytes at `target` without rewriting them (link or server-side copy)."""
    if is_local(source) and is_local(target):
        path, destination = local_path(source), local_path(target)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        if os.path.exists(destination):
            os.remove(destination)  # a run killed midway left it; links are cheap to redo
        try:
            os.link(path, destination)
        except OSError as error:
            if error.errno not in NO_LINK:
                raise
            shutil.copyfile(path, destination)
        return
    if source.split("://", 1)[0] != target.split("://", 1)[0]:
        raise ConfigError(
            f"{target}: a takedown writes its new versions on the storage of the dataset "
            f"({source.split('://', 1)[0] if '://' in source else 'local disk'}); choose "
            "--output there"
        )
    fs, path = url_filesystem(source, storage_options)
    _, destination = url_filesystem(target, storage_options)
    fs.copy(path, destination)


BATCH_TOKENS = 1 << 24  # 32 MiB of uint16 tokens (and 128 MiB of positions) at a time


def batches(lengths: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """`[lo, hi)` ranges of documents (of `lengths` tokens) that end where the running
    total reaches a multiple of `limit`; a document longer than `limit` is a batch alone.

    Example:
        >>> batches(np.array([5, 5, 5, 5]), 10), batches(np.array([25, 1]), 10)
        ([(0, 2), (2, 4)], [(0, 1), (1, 2)])
    """
    ends = np.cumsum(lengths)
    cuts = np.searchsorted(ends, np.arange(limit, int(ends[-1]) + 1, limit)) + 1
    edges = np.unique(np.concatenate(([0], np.minimum(cuts, len(lengths)), [len(lengths)])))
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def filter_shard(
    reader: ShardReader,
    meta: pa.Table,
    drop: np.ndarray,
    folder: str,
    storage_options=None,
    batch_tokens: int = BATCH_TOKENS,
) -> ShardRecord:
    """Write shard `reader.name` into `folder` without its documents `drop` (row numbers);
    `meta` is its metadata table. At least one document must remain. The kept documents
    are copied from the memory map in batches of about `batch_tokens` tokens, so memory
    does not grow with the shard (the writer's output does not depend on the batches)."""
    keep = np.ones(len(reader), dtype=bool)
    keep[drop] = False
    rows = np.flatnonzero(keep)
    lengths = reader.lengths()[rows]
    starts = reader.offsets[:-1].astype(np.int64)[rows]
    task = (parse_stem(reader.name) or (0, 0))[0]
    shard = _OpenShard(folder, task, reader.dtype, storage_options, reader.mask is not None)
    shard.name = reader.name
    for lo, hi in batches(lengths, batch_tokens):
        taken = lengths[lo:hi]
        # The batch's token positions in the shard, document after document.
        positions = np.repeat(starts[lo:hi] - (np.cumsum(taken) - taken), taken)
        positions += np.arange(int(taken.sum()))
        mask = None if reader.mask is None else reader.mask[positions]
        part = meta.take(pa.array(rows[lo:hi]))
        shard.write(reader.tokens[positions], taken, part, mask)
    return shard.finish()


def filter_column(
    source: str, drop: np.ndarray, documents: int, target: str, storage_options=None
) -> ColumnFile:
    """Write an added column's file of one shard without rows `drop` (of `documents`)."""
    fs, path = url_filesystem(source, storage_options)
    with fs.open(path, "rb") as handle:
        table = pq.read_table(handle)
    keep = np.ones(documents, dtype=bool)
    keep[drop] = False
    sink = io.BytesIO()
    kept = table.take(pa.array(np.flatnonzero(keep)))
    pq.write_table(kept, sink, compression="zstd", row_group_size=META_ROW_GROUP)
    data = sink.getvalue()
    write_bytes(target, data, storage_options)
    name = target.rsplit("/", 1)[-1]
    digest = f"xxh3_128:{xxhash.xxh3_128_hexdigest(data)}"
    return ColumnFile(name, len(data), digest, kept.num_rows)
