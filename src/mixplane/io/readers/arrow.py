"""Hugging Face datasets saved with `save_to_disk`: Arrow IPC stream files, one per shard."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

import orjson
import pyarrow as pa

from mixplane.io.readers.base import ReadOptions, ReadStats, Shard
from mixplane.io.readers.rows import table_documents
from mixplane.io.urls import url_filesystem


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield a Document per row, named `NAME#ROW`.

    The source defaults to the dataset folder's name; for a saved `DatasetDict` the split
    folder (`train`, `test`...) is kept as the `split` property. The licence the dataset's
    card declares (`license` in the `dataset_info.json` beside the file), when it declares
    one, is kept as the `dataset_license` property, which the `license` stage reads.
    """
    fs, path = url_filesystem(shard.url, options.storage_options)
    folder, split = _dataset_folder(fs, path)
    source = options.source or posixpath.basename(folder) or "dataset"
    extra: dict[str, str] = {}
    if split is not None:
        extra["split"] = split
    declared = card_license(fs, posixpath.dirname(path))
    if declared:
        extra["dataset_license"] = declared
    row = 0
    with fs.open(path, "rb") as handle:
        reader = pa.ipc.open_stream(handle)
        for batch in reader:
            stats.bytes += batch.nbytes
            table = pa.Table.from_batches([batch])
            yield from table_documents(table, shard, options, source, row, extra or None)
            row += batch.num_rows


def card_license(fs, folder: str) -> str | None:
    """The `license` of the `dataset_info.json` in `folder` (what `save_to_disk` keeps of the
    dataset card); None when there is no such file, it is not JSON or the licence is blank."""
    info_path = posixpath.join(folder, "dataset_info.json")
    try:
        with fs.open(info_path, "rb") as handle:
            info = orjson.loads(handle.read())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None
    found = info.get("license") if isinstance(info, dict) else None
    return found.strip() if isinstance(found, str) and found.strip() else None


def dataset_source(url: str, storage_options: dict) -> str:
    """The source of an Arrow file's records when neither the input nor a record names one:
    the dataset folder's name."""
    fs, path = url_filesystem(url, storage_options)
    return posixpath.basename(_dataset_folder(fs, path)[0]) or "dataset"


def has_source_column(url: str, storage_options: dict) -> bool:
    """Whether the file's rows carry a `source` column of their own (its schema says so)."""
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        return "source" in pa.ipc.open_stream(handle).schema.names


def _dataset_folder(fs, path: str) -> tuple[str, str | None]:
    """The dataset's folder and, for a saved `DatasetDict`, the split the file belongs to."""
    folder = posixpath.dirname(path)
    if fs.exists(posixpath.join(posixpath.dirname(folder), "dataset_dict.json")):
        return posixpath.dirname(folder), posixpath.basename(folder)
    return folder, None
