"""Synthetic tokenized datasets: real shards and manifests with random tokens.

For loader tests and benchmarks at sizes where tokenizing text would dominate. Shards are
written by the store's own writer, the manifest has the fields `mixplane tokenize` writes,
so the catalog registers these folders like any other.

Example:
    >>> write_token_dataset("/tmp/web", documents=1000, seed=1, source="web")  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from mixplane.io.atomic import join_url, write_bytes
from mixplane.manifest import write_manifest
from mixplane.store.format import FILE_SUFFIXES, FORMAT_NAME, FORMAT_VERSION, token_dtype
from mixplane.store.writer import TaskShardWriter

LANGUAGES = ("en", "de", "fr", "es")


def write_token_dataset(
    folder: str,
    documents: int,
    seed: int = 0,
    source: str = "synthetic",
    mean_tokens: int = 300,
    vocab_size: int = 32_000,
    eos_id: int | None = None,
    shard_bytes: int = 64 << 20,
    batch: int = 50_000,
    storage_options: dict[str, Any] | None = None,
    tokens: Callable[[np.random.Generator, int], np.ndarray] | None = None,
    group_by: str | None = None,
    lengths: Callable[[np.random.Generator, int], np.ndarray] | None = None,
    properties: Callable[[np.ndarray], dict[str, list]] | None = None,
) -> str:
    """Write `documents` documents of random tokens; returns the manifest's URL.

    Lengths are uniform in 1..2*mean_tokens (from 2 with an EOS), or as `lengths(rng,
    count)` draws them (a long-tailed distribution, say; at least the shortest); token ids in
    1..vocab_size-1, uniform, or as `tokens(rng, count)` makes them (a generator of
    structured text, such as a Markov chain). `eos_id`, when given, ends every document as
    if tokenized with EOS.
    Properties: `source`, `language` (en, de, fr, es by document number, in turn),
    `quality` (uniform in [0, 1)), and the columns `properties(document_numbers)` returns
    (a `url`, say). `group_by` writes shards as `tokenize --group-by` does.
    """
    rng = np.random.default_rng(seed)
    dtype = token_dtype(vocab_size)
    writer = TaskShardWriter(folder, 0, dtype, shard_bytes, storage_options, group_by)
    done = 0
    while done < documents:
        count = min(batch, documents - done)
        shortest = 1 if eos_id is None else 2  # at least one token besides the EOS
        if lengths is None:
            sizes = rng.integers(shortest, 2 * mean_tokens + 1, count).astype(np.int64)
        else:
            sizes = np.maximum(np.asarray(lengths(rng, count), dtype=np.int64), shortest)
        total = int(sizes.sum())
        made = rng.integers(1, vocab_size, total) if tokens is None else tokens(rng, total)
        made = np.asarray(made).astype(dtype)
        if eos_id is not None:
            made[np.cumsum(sizes) - 1] = eos_id
        numbers = np.arange(done, done + count)
        meta = pa.table(
            {
                "id": pa.array([f"{source}-{seed}-{n}" for n in numbers.tolist()]),
                "source": pa.array([source] * count),
                "language": pa.array(np.array(LANGUAGES, dtype=object)[numbers % 4].tolist()),
                "quality": pa.array(rng.random(count)),
            }
        )
        for column, values in (properties(numbers) if properties else {}).items():
            meta = meta.append_column(column, pa.array(values))
        writer.add(made, sizes, meta)
        done += count
    records = [record.to_json() for record in writer.close()]
    outputs = [
        {"path": record["name"] + suffix, **record["files"][key]}
        for record in records
        for key, suffix in FILE_SUFFIXES.items()
        if key in record["files"]
    ]
    tokens_total = sum(record["tokens"] for record in records)
    write_bytes(join_url(folder, "_stats.json"), b"{}", storage_options)
    return write_manifest(
        folder,
        {
            "kind": "tokenize",
            "format": {"name": FORMAT_NAME, "version": FORMAT_VERSION},
            "config": {
                "synthetic": True,
                "seed": seed,
                "documents": documents,
                "group_by": group_by,
            },
            "tokenizer": {
                "spec": f"synthetic:{vocab_size}",
                "kind": "synthetic",
                "vocab_size": vocab_size,
                "bos_id": None,
                "eos_id": eos_id,
                "dtype": dtype.name,
                "fingerprint": f"synthetic:{vocab_size}",
            },
            "inputs": [],
            "parents": [],
            "totals": {"documents": documents, "tokens": tokens_total, "shards": len(records)},
            "shards": records,
            "outputs": outputs,
        },
        storage_options,
    )


def write_catalog(
    folder: str,
    datasets: dict[str, dict[str, Any]],
    catalog: str | None = None,
    storage_options: dict[str, Any] | None = None,
) -> str:
    """Write each dataset (`name: write_token_dataset options`) under `folder` and register
    it in a catalog (default `folder/catalog.duckdb`); returns the catalog's path.

    Example:
        >>> write_catalog("/tmp/c", {"wiki": {"documents": 500}})  # doctest: +SKIP
        '/tmp/c/catalog.duckdb'
    """
    from mixplane.catalog import Catalog

    path = catalog or join_url(folder, "catalog.duckdb")
    registry = Catalog(path, storage_options=storage_options)
    for name, options in datasets.items():
        target = join_url(folder, name)
        write_token_dataset(target, storage_options=storage_options, **options)
        registry.register(target, name=name)
    return path
