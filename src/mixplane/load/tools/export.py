"""A mixture (or one query's selection) exported as Megatron indexed datasets, with the blend.

Each leaf component becomes one `.bin`/`.idx` pair holding its selected documents in catalog
order, with the EOS the loader would append; the blend is the leaf weights at step 0, as
Megatron's `--data-path W1 PREFIX1 W2 PREFIX2 ...` takes it (weights over samples of equal
length are weights over tokens, as ours are). Megatron then packs and shuffles on its own,
so the export carries the selection and the weights, not mixplane's exact order.

Example:
    >>> summary = export_mixture("mixture.yaml", "megatron/")  # doctest: +SKIP
    >>> summary["data_path"]  # doctest: +SKIP
    '0.5 megatron/wiki 0.3 megatron/code 0.2 megatron/web_de'
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from mixplane.io.atomic import join_url
from mixplane.load.plan.resolved import ResolvedMixture
from mixplane.load.read.source import TokenSource, token_source
from mixplane.load.resolve.query import resolve_mixture
from mixplane.mix.spec import MixtureSpec, load_mixture
from mixplane.mix.tree import MixtureTree
from mixplane.store.megatron import megatron_dtype, refuse_masks, write_indexed

CHUNK_DOCUMENTS = 1 << 16


def export_mixture(
    mixture: MixtureSpec | dict[str, Any] | str | Path,
    out: str,
    catalog: Any = None,
) -> dict[str, Any]:
    """Write `OUT/LEAF.bin` and `OUT/LEAF.idx` for every leaf; returns the files and blend."""
    resolved = resolve_mixture(load_mixture(mixture), catalog)
    tree = MixtureTree(resolved.spec)
    weights = tree.leaf_weights(np.array([float(n.sum()) for n in resolved.lengths]))
    parts = [
        {"component": name, "weight": float(weights[c])}
        | export_leaf(resolved, c, join_url(out, name))
        for c, name in enumerate(tree.names)
    ]
    return {
        "components": parts,
        "data_path": " ".join(f"{p['weight']:.6g} {p['prefix']}" for p in parts),
        "scheduled": bool(resolved.spec.schedule),
    }


def export_selection(where: str, catalog: str, out: str) -> dict[str, Any]:
    """One query's documents, as stored, as a single `OUT.bin`/`OUT.idx` pair."""
    spec = {
        "catalog": catalog,
        "seq_len": 1,
        "append_eos": False,
        "components": {"selection": {"where": where, "weight": 1}},
    }
    return export_leaf(resolve_mixture(load_mixture(spec)), 0, out)


def export_leaf(resolved: ResolvedMixture, c: int, prefix: str) -> dict[str, Any]:
    masked = [info["dataset"] for info in resolved.datasets if info.get("masked")]
    if masked:
        refuse_masks(", ".join(masked))
    source = token_source(resolved)
    dtype = megatron_dtype(source_dtype(resolved))
    options = resolved.spec.storage_options
    return write_indexed(prefix, leaf_documents(resolved, source, c), dtype, options)


def source_dtype(resolved: ResolvedMixture) -> np.dtype:
    widths = [
        np.dtype((d.get("tokenizer") or {}).get("dtype", "uint32")) for d in resolved.datasets
    ]
    return max(widths, key=lambda dtype: dtype.itemsize)


def leaf_documents(
    resolved: ResolvedMixture, source: TokenSource, c: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """`(tokens, document lengths)` chunks of leaf `c`'s documents, EOS appended as the
    loader appends it. Documents of one range are consecutive in their shard."""
    ranges, starts, lengths = resolved.ranges[c], resolved.starts[c], resolved.lengths[c]
    for r in range(len(ranges.shard)):
        shard = int(ranges.shard[r])
        appended = int(resolved.appended[shard])
        source.open(np.array([shard]))
        tokens = source.tokens(shard)
        for first in range(int(ranges.bases[r]), int(ranges.bases[r + 1]), CHUNK_DOCUMENTS):
            last = min(first + CHUNK_DOCUMENTS, int(ranges.bases[r + 1]))
            sizes = np.asarray(lengths[first:last], dtype=np.int64)
            begin = int(starts[first])
            chunk = np.asarray(tokens[begin : begin + int(sizes.sum()) - appended * len(sizes)])
            if appended:
                chunk = np.insert(chunk, np.cumsum(sizes - 1), resolved.eos_id)
            yield chunk, sizes
