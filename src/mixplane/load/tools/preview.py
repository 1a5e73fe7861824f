"""What a mixture will deliver over the first N steps, without reading the whole stream.

Requested shares come from the weights in force over those steps (schedule included),
realized shares from the blend's exact counts; epochs say how often each component's data
is seen. The first sequences are read for real and decoded when the tokenizer is available.

Example:
    >>> report = preview_mixture("mixture.yaml", steps=1000, show=2)  # doctest: +SKIP
    >>> [(c["name"], c["requested"], c["realized"]) for c in report["components"]]  # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mixplane.errors import MixplaneError
from mixplane.load.dataset import MixtureDataset
from mixplane.mix.spec import MixtureSpec


def preview_mixture(
    mixture: MixtureSpec | dict[str, Any] | str | Path,
    steps: int,
    show: int = 3,
    catalog: Any = None,
    weight_log: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Requested vs realized shares, epochs and sample sequences for the first `steps`.

    `weight_log` (a run's weight changes, see `mixplane.load.adaptive.weight_log`) shows what that
    run's stream was made of.
    """
    dataset = MixtureDataset(mixture, catalog=catalog, prefetch=0, audit=False)
    if weight_log:
        dataset.apply_weight_changes(weight_log)
    plan, spec = dataset.plan, dataset.spec
    # Without global_batch_size there are no training steps to speak of: count sequences.
    wanted = steps * (spec.global_batch_size or 1)
    sequences = wanted if plan.length is None else min(wanted, plan.length)
    counts = plan.blend.counts_before(sequences)
    requested = requested_shares(plan, sequences)
    epochs = plan.epochs_at(sequences)
    components = []
    for c, (leaf, packed) in enumerate(zip(plan.tree.leaves, plan.components, strict=True)):
        components.append(
            {
                "name": leaf.name,
                "where": leaf.where,
                "documents": len(packed),
                "tokens": packed.total_tokens,
                "sequences_per_epoch": packed.sequences_per_epoch,
                "requested": float(requested[c]),
                "realized": float(counts[c] / sequences) if sequences else 0.0,
                "sequences": int(counts[c]),
                "epochs": float(epochs[c]),
                "max_epochs": leaf.max_epochs,
            }
        )
    return {
        "mixture_fingerprint": dataset.fingerprint,
        "steps": steps,
        "global_batch_size": spec.global_batch_size,
        "sequences": int(sequences),
        "tokens": int(sequences) * spec.seq_len,
        "stream_ends_at": plan.length,
        "components": components,
        "segments": segments_until(plan, sequences),
        "samples": samples(dataset, min(show, sequences)),
    }


def requested_shares(plan, sequences: int) -> np.ndarray:
    """Weights in force over positions [0, sequences), averaged by how long each held."""
    total = np.zeros(len(plan.names), dtype=np.float64)
    for segment in plan.blend.segments:
        end = sequences if segment.end is None else min(segment.end, sequences)
        if end > segment.start:
            total += segment.weights * (end - segment.start)
    return total / max(sequences, 1)


def segments_until(plan, sequences: int) -> list[dict[str, Any]]:
    out = []
    for segment in plan.blend.segments:
        if segment.start >= max(sequences, 1):
            break
        out.append(
            {
                "from_sequence": segment.start,
                "to_sequence": segment.end,
                "weights": {n: float(w) for n, w in zip(plan.names, segment.weights, strict=True)},
                # Simple fractions repeat a period of this many sequences (None: other weights).
                "period": getattr(segment.split, "period", None),
            }
        )
    return out


def samples(dataset: MixtureDataset, count: int) -> list[dict[str, Any]]:
    if count <= 0:
        return []
    arrays = dataset.read_positions(np.arange(count))
    decode, problem = _decoder(dataset)
    out = []
    for row in range(count):
        tokens = arrays["input_ids"][row]
        entry = {
            "index": row,
            "component": dataset.names[int(arrays["component"][row])],
            "pieces": dataset.explain(row),
            "tokens": tokens[:32].tolist(),
        }
        if decode is not None:
            entry["text"] = decode(tokens.tolist())
        else:
            entry["text_unavailable"] = problem
        out.append(entry)
    return out


def _decoder(dataset: MixtureDataset):
    """The tokenizer's decode, or None and the reason it cannot be loaded."""
    from mixplane.store.dataset import TokenizedDataset
    from mixplane.tokenize.load import dataset_tokenizer  # only when decoding

    info = dataset.resolved.datasets[0]
    try:
        tokenized = TokenizedDataset(
            info["uri"], dataset.spec.storage_options, dataset.spec.cache_dir
        )
        return dataset_tokenizer(tokenized).decode, None
    except (MixplaneError, OSError, ValueError, KeyError, ImportError) as error:
        return None, f"tokenizer not available: {error}"


def stream_through_torch(
    mixture: MixtureSpec | dict[str, Any] | str | Path,
    batches: int = 300,
    batch_size: int = 8,
    num_workers: int = 2,
    catalog: Any = None,
) -> dict[str, Any]:
    """Stream `batches` batches through a torch DataLoader; realized shares and throughput.

    Example:
        >>> stream_through_torch("mixture.yaml", batches=300, num_workers=2)  # doctest: +SKIP
        {'batches': 300, 'sequences_per_second': ..., 'components': [...]}
    """
    import time

    from mixplane.load.torch import torch_loader

    dataset = MixtureDataset(mixture, catalog=catalog, audit=False)
    names = dataset.names
    loader = torch_loader(dataset, batch_size, num_workers=num_workers)
    started = time.perf_counter()
    counts = np.zeros(len(names), dtype=np.int64)
    seen = 0
    first_batch = None
    for batch in loader:
        if first_batch is None:
            first_batch = time.perf_counter() - started
        counts += np.bincount(batch["component"].numpy(), minlength=len(names))
        seen += 1
        if seen == batches:
            break
    seconds = time.perf_counter() - started
    sequences = int(counts.sum())
    requested = requested_shares(dataset.plan, sequences)
    return {
        "batches": seen,
        "sequences": sequences,
        "tokens": sequences * dataset.seq_len,
        "seconds": seconds,
        "first_batch_seconds": first_batch,
        "sequences_per_second": sequences / seconds if seconds else 0.0,
        "tokens_per_second": sequences * dataset.seq_len / seconds if seconds else 0.0,
        "workers": num_workers,
        "components": [
            {
                "name": name,
                "requested": float(requested[c]),
                "realized": float(counts[c] / sequences) if sequences else 0.0,
            }
            for c, name in enumerate(names)
        ],
    }
