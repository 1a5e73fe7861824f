"""Example documents from a selection: their properties and their text decoded from tokens.

Examples are spread evenly over the selection (the same ones every time), read from the shard
metadata, and decoded with the tokenizer saved beside the shards. An image-text dataset holds
no tokens: its text is the sample's caption, from the metadata.

Example:
    >>> rows = sample_documents(selection["web"], 3)  # doctest: +SKIP
    >>> rows[0]["id"], rows[0]["text"][:40]  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from mixplane.catalog.columns import COLUMN_SUFFIX
from mixplane.catalog.dataset import MEDIA_KINDS, META_SUFFIX, dataset_kind
from mixplane.catalog.selection import DatasetSelection
from mixplane.errors import MixplaneError
from mixplane.io.atomic import join_url
from mixplane.io.urls import url_filesystem
from mixplane.json_values import json_value  # noqa: F401  (imported from here by others)
from mixplane.manifest import MANIFEST, read_json


def spread_positions(total: int, k: int) -> np.ndarray:
    """`k` evenly spread positions in `range(total)` (all of them when `k >= total`).

    Example:
        >>> spread_positions(10, 3).tolist()
        [1, 5, 8]
    """
    if k >= total:
        return np.arange(total, dtype=np.int64)
    return ((np.arange(k, dtype=np.float64) + 0.5) * total / k).astype(np.int64)


def locate(part: DatasetSelection, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(shard, document index)` of the selection's documents at `positions` (in range order)."""
    ends = np.cumsum(part.document_counts())
    ranges = np.searchsorted(ends, positions, side="right")
    before = ends[ranges] - part.document_counts()[ranges]
    return part.shard[ranges], part.start[ranges] + (positions - before)


def sample_documents(part: DatasetSelection, k: int, decode: bool = True) -> list[dict[str, Any]]:
    """Up to `k` selected documents: shard, index, properties and (with `decode`) text."""
    return documents_at(part, spread_positions(part.documents, k), decode)


def documents_at(
    part: DatasetSelection, positions: np.ndarray, decode: bool = True
) -> list[dict[str, Any]]:
    """The selected documents at `positions` (0 is the selection's first document, in range
    order): shard, index, properties and (with `decode`) text.

    Example:
        >>> rows = documents_at(selection["web"], np.arange(20, 30))  # doctest: +SKIP
    """
    storage_options = part.storage_options
    shards, indices = locate(part, np.asarray(positions, dtype=np.int64))
    decoder = _Decoder(part.uri, storage_options) if decode else None
    wanted: dict[int, list[int]] = {}
    for shard, index in zip(shards.tolist(), indices.tolist(), strict=True):
        wanted.setdefault(shard, []).append(index)
    rows = {
        (shard, index): row
        for shard, found in wanted.items()
        for index, row in zip(
            found,
            _property_rows(part.uri, part.shards[shard], found, part.added, storage_options),
            strict=True,
        )
    }
    examples = []
    for shard, index in zip(shards.tolist(), indices.tolist(), strict=True):
        stem = part.shards[shard]
        row = rows[shard, index]
        example = {"dataset": part.dataset, "shard": stem, "index": index, **row}
        if decoder is not None:
            example["text"] = decoder.text(stem, index, row)
        examples.append(example)
    return examples


def read_document(
    uri: str,
    stem: str,
    index: int,
    storage_options: dict[str, Any] | None = None,
    added: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """One document of a dataset folder: its properties (with the `added` columns, as
    (name, folder), of its version) and (when the folder has a tokenizer) its text, decoded
    from its tokens; for an image-text folder, the caption."""
    properties = _property_rows(uri, stem, [index], added, storage_options)[0]
    text = _Decoder(uri, storage_options).text(stem, index, properties)
    return {"properties": properties, "text": text}


def _property_rows(
    uri: str,
    stem: str,
    indices: list[int],
    added: Sequence[tuple[str, str]],
    storage_options: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """Rows `indices` of a shard's metadata, each with its values of the `added` columns."""
    rows = _meta_rows(join_url(uri, stem + META_SUFFIX), indices, storage_options)
    for _, folder in added:
        values = _meta_rows(join_url(folder, stem + COLUMN_SUFFIX), indices, storage_options)
        for row, value in zip(rows, values, strict=True):
            row.update(value)
    return rows


def _meta_rows(
    url: str, indices: list[int], storage_options: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Rows `indices` of one metadata file, in that order; each row group read once."""
    fs, path = url_filesystem(url, storage_options)
    with fs.open(path, "rb") as handle:
        parquet = pq.ParquetFile(handle)
        starts = np.cumsum(
            [0] + [parquet.metadata.row_group(g).num_rows for g in range(parquet.num_row_groups)]
        )
        groups: dict[int, Any] = {}
        rows = []
        for index in indices:
            group = int(np.searchsorted(starts, index, side="right")) - 1
            if not 0 <= index < starts[-1]:
                raise MixplaneError(
                    f"{url}: has no row {index}; the shard changed since it was registered"
                )
            if group not in groups:  # read only the row groups holding the rows
                groups[group] = parquet.read_row_group(group)
            rows.append(groups[group].slice(index - int(starts[group]), 1).to_pylist()[0])
    return rows


class _Decoder:
    """Decodes documents of one dataset folder; an image-text folder's text is the caption;
    without token files, text is None."""

    def __init__(self, uri: str, storage_options: dict[str, Any] | None):
        from mixplane.store import TokenizedDataset
        from mixplane.tokenize.load import dataset_tokenizer  # only when decoding

        self.captions = False
        try:
            self.dataset = TokenizedDataset(uri, storage_options)
            self.tokenizer = dataset_tokenizer(self.dataset)
        except (MixplaneError, KeyError, OSError, ImportError):
            # ImportError: a load-only install has no tokenizer libraries to decode with.
            self.dataset = None
            self.captions = _is_media(uri, storage_options)

    def text(self, stem: str, index: int, properties: dict[str, Any]) -> str | None:
        if self.captions:
            return properties.get("caption")
        if self.dataset is None:
            return None
        try:
            tokens = self.dataset.shard(stem).document(index)
        except (MixplaneError, KeyError, OSError):
            return None
        return self.tokenizer.decode(tokens.tolist())


def _is_media(uri: str, storage_options: dict[str, Any] | None) -> bool:
    """Whether the folder's manifest says it holds media shards (their text: `caption`)."""
    try:
        manifest = read_json(join_url(uri, MANIFEST), storage_options)
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and dataset_kind(manifest) in MEDIA_KINDS
