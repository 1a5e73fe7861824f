"""Export to Megatron's indexed dataset layout (`PREFIX.bin` + `PREFIX.idx`).

Each document is one sequence. The `.idx` holds the 9-byte magic `MMIDIDX\\x00\\x00`,
version 1 (uint64), the dtype code (uint8: 8 = uint16, 4 = int32), the sequence count and
the document-index count (uint64 each), then int32 sequence lengths, int64 byte pointers
into the `.bin`, and int64 document indices (`0..n`, one more than the documents).
Megatron's layout has no unsigned 32-bit code, so 32-bit vocabularies are written as int32
(ids above 2^31 - 1 are refused); 16-bit vocabularies stay uint16.

Fine-tuning data (shards with loss masks) is refused: Megatron's indexed dataset has no
place for a mask, and training on its tokens without one would train on the prompts too.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from mixplane.errors import MixplaneError
from mixplane.io.atomic import atomic_open
from mixplane.store.dataset import TokenizedDataset
from mixplane.store.format import strip_suffix

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
DTYPE_CODES = {np.dtype("<u2"): 8, np.dtype("<i4"): 4}
CHUNK_DOCUMENTS = 1 << 16


def megatron_dtype(dtype: np.dtype) -> np.dtype:
    """The Megatron dtype for our token dtype: uint16 stays, uint32 becomes int32."""
    return np.dtype("<u2") if np.dtype(dtype).itemsize == 2 else np.dtype("<i4")


def export_megatron(
    dataset: TokenizedDataset | str,
    out: str,
    storage_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write `OUT.bin` and `OUT.idx` with every document of every shard, in shard order (a
    `.bin`/`.idx` suffix on `out` is ignored).

    Example:
        >>> export_megatron("tokens/", "megatron/web")  # doctest: +SKIP
        {'bin': 'megatron/web.bin', 'idx': 'megatron/web.idx', 'documents': 1200, ...}
    """
    if not isinstance(dataset, TokenizedDataset):
        dataset = TokenizedDataset(dataset, storage_options)
    if dataset.masked:
        refuse_masks(dataset.folder)
    dtype = megatron_dtype(dataset.dtype)
    return write_indexed(strip_suffix(out), _shard_documents(dataset), dtype, storage_options)


def refuse_masks(names: str) -> None:
    """Raise: the data `names` says carries loss masks, which Megatron's layout cannot."""
    raise MixplaneError(
        f"{names}: fine-tuning data with loss masks, which Megatron's indexed dataset "
        "(.bin/.idx) cannot carry, so an export would train on every token; read it with "
        "mixplane's loader (labels: true gives Megatron-style labels and loss_mask)"
    )


def _shard_documents(dataset: TokenizedDataset) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    for number in range(len(dataset.shards)):
        reader = dataset.shard(number)
        lengths = reader.lengths()
        for first in range(0, len(lengths), CHUNK_DOCUMENTS):
            last = min(first + CHUNK_DOCUMENTS, len(lengths))
            begin, end = int(reader.offsets[first]), int(reader.offsets[last])
            yield np.asarray(reader.tokens[begin:end]), lengths[first:last]


def write_indexed(
    prefix: str,
    chunks: Iterable[tuple[np.ndarray, np.ndarray]],
    dtype: np.dtype,
    storage_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write `PREFIX.bin` and `PREFIX.idx` from `(tokens, document lengths)` chunks, each
    holding whole documents; returns what was written."""
    dtype = np.dtype(dtype)
    lengths: list[np.ndarray] = []
    with atomic_open(prefix + ".bin", storage_options) as handle:
        for tokens, sizes in chunks:
            if len(tokens) and int(tokens.max()) > np.iinfo(dtype).max:
                raise MixplaneError(
                    f"{prefix}: token id {int(tokens.max())} does not fit Megatron's {dtype.name}"
                )
            handle.write(np.asarray(tokens).astype(dtype, copy=False).tobytes())
            lengths.append(np.asarray(sizes, dtype=np.int64))
    sizes = np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64)
    if len(sizes) and int(sizes.max()) > np.iinfo(np.int32).max:
        raise MixplaneError(f"{prefix}: a document is too long for Megatron's int32 lengths")
    n = len(sizes)
    pointers = (np.cumsum(sizes) - sizes) * dtype.itemsize
    with atomic_open(prefix + ".idx", storage_options) as handle:
        handle.write(MAGIC)
        handle.write(struct.pack("<QBQQ", VERSION, DTYPE_CODES[dtype], n, n + 1))
        handle.write(sizes.astype("<i4").tobytes())
        handle.write(pointers.astype("<i8").tobytes())
        handle.write(np.arange(n + 1, dtype="<i8").tobytes())
    return {
        "prefix": prefix,
        "bin": prefix + ".bin",
        "idx": prefix + ".idx",
        "documents": n,
        "tokens": int(sizes.sum()),
        "dtype": dtype.name,
    }
