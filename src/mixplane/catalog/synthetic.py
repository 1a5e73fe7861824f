"""Metadata-only tokenized folders: shard `.meta.parquet` files and a `tokenize` manifest.

The catalog reads only the metadata beside the shards, so these folders register and query
like real ones; they exist to benchmark the catalog at sizes where tokenizing real text would
dominate, and to build exact property tables in tests. `random_properties` makes a table with
a few typed property columns from a seed.

Example:
    >>> tables = [random_properties(1000, seed=s) for s in range(3)]  # doctest: +SKIP
    >>> write_metadata_shards("/tmp/meta-only", tables)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from mixplane.io.atomic import join_url, write_bytes
from mixplane.manifest import file_digest, write_manifest

LANGUAGES = ("en", "de", "fr", "es", "zh", "ja", "ru", "pt", "it", "nl")
SOURCES = ("web", "wiki", "code", "forum", "books")
LICENSES = ("cc-by", "cc-by-sa", "mit", "apache-2.0", None)
TAGS = ("news", "science", "sports", "health", "tech", "art")


def random_properties(documents: int, seed: int, prefix: str = "doc") -> pa.Table:
    """A metadata table with string, number, boolean and list properties (some NULL)."""
    rng = np.random.default_rng(seed)
    numbers = pc.cast(pa.array(np.arange(documents)), pa.string())
    ids = pc.binary_join_element_wise(f"{prefix}-{seed}", numbers, "-")
    languages = np.array(LANGUAGES, dtype=object)[rng.zipf(1.6, documents) % len(LANGUAGES)]
    licenses = np.array(LICENSES, dtype=object)[rng.integers(0, len(LICENSES), documents)]
    tag_counts = rng.integers(0, 3, documents)
    tag_values = np.array(TAGS, dtype=object)[rng.integers(0, len(TAGS), int(tag_counts.sum()))]
    tag_offsets = np.concatenate(([0], np.cumsum(tag_counts))).astype(np.int32)
    return pa.table(
        {
            "id": ids,
            "n_tokens": pa.array(rng.integers(1, 4096, documents), pa.int64()),
            "source": pa.array(np.array(SOURCES, dtype=object)[rng.integers(0, 5, documents)]),
            "language": pa.array(languages, pa.string()),
            "quality": pa.array(rng.random(documents), pa.float64()),
            "dup_cluster_size": pa.array(rng.geometric(0.7, documents), pa.int32()),
            "is_boilerplate": pa.array(rng.random(documents) < 0.1),
            "license": pa.array(licenses, pa.string()),
            "tags": pa.ListArray.from_arrays(pa.array(tag_offsets), pa.array(tag_values)),
        }
    )


def write_metadata_shards(
    folder: str,
    tables: Iterable[pa.Table],
    tokenizer: dict[str, Any] | None = None,
    parents: Sequence[str] = (),
    row_group_size: int = 65_536,
    storage_options: dict[str, Any] | None = None,
) -> str:
    """Write one `shard-00000-KKK.meta.parquet` per table plus `_manifest.json`; its URL.

    Every table needs `id` and `n_tokens` columns; shard KKK holds `tables[KKK]`.
    """
    records = []
    for number, table in enumerate(tables):
        name = f"shard-00000-{number:03d}"
        url = join_url(folder, f"{name}.meta.parquet")
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd", row_group_size=row_group_size)
        write_bytes(url, sink.getvalue().to_pybytes(), storage_options)
        size, digest = file_digest(url, storage_options)
        tokens = int(pc.sum(table["n_tokens"]).as_py() or 0)
        records.append(
            {
                "name": name,
                "documents": table.num_rows,
                "tokens": tokens,
                "files": {"meta": {"size": size, "hash": digest}},
            }
        )
    return write_manifest(
        folder,
        {
            "kind": "tokenize",
            "tokenizer": tokenizer or {"spec": "synthetic", "vocab_size": 4096, "dtype": "uint16"},
            "shards": records,
            "outputs": [
                {"path": r["name"] + ".meta.parquet", **r["files"]["meta"]} for r in records
            ],
            "parents": list(parents),
        },
        storage_options,
    )
