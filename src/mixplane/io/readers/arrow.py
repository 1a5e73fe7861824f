"""Hugging Face datasets saved with `save_to_disk`: Arrow IPC stream files, one per shard."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

import pyarrow as pa

from mixplane.io.readers.base import Quarantined, ReadOptions, ReadStats, Shard, to_document
from mixplane.io.urls import url_filesystem


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield a Document per row, named `NAME#ROW`.

    The source defaults to the dataset folder's name; for a saved `DatasetDict` the split
    folder (`train`, `test`...) is kept as the `split` property.
    """
    fs, path = url_filesystem(shard.url, options.storage_options)
    folder = posixpath.dirname(path)
    split = None
    if fs.exists(posixpath.join(posixpath.dirname(folder), "dataset_dict.json")):
        split = posixpath.basename(folder)
        folder = posixpath.dirname(folder)
    source = options.source or posixpath.basename(folder) or "dataset"
    row = 0
    with fs.open(path, "rb") as handle:
        reader = pa.ipc.open_stream(handle)
        for batch in reader:
            stats.bytes += batch.nbytes
            for record in batch.to_pylist():
                if split is not None:
                    record.setdefault("split", split)
                result = to_document(record, options, source, f"{shard.name}#{row}")
                if isinstance(result, str):
                    raw = repr(record).encode("utf-8", "replace")
                    yield Quarantined(location=f"{shard.url}#row {row}", error=result, raw=raw)
                else:
                    yield result
                row += 1
