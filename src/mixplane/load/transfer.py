"""How a DataLoader worker's batch reaches the training process: compact bytes in the pipe.

Tensors that a worker returns normally travel one by one through a new shared-memory file
whose descriptor is passed over a socket: about a millisecond per batch, whatever its size.
A batch of packed sequences is also mostly redundant: per-token document or position numbers
are a few runs per sequence, and token ids fit in the 2 or 4 bytes they are stored in.
`WorkerBatch` pickles a batch as one compact buffer that rides in the worker's result pipe;
unpickling it in the training process rebuilds the same arrays as tensors. Past about a
megabyte (long sequences, large batches) one shared-memory file is faster again, and the
batch travels as tensors over a single storage.

Example:
    >>> import pickle
    >>> batch = {"ids": np.arange(6).reshape(2, 3), "doc": np.zeros((2, 3), np.int32)}
    >>> tensors = pickle.loads(pickle.dumps(WorkerBatch(batch)))
    >>> tensors["ids"].tolist(), tensors["doc"].dtype
    ([[0, 1, 2], [3, 4, 5]], torch.int32)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from mixplane.load._pieces import number_pieces

# Batches up to this many bytes travel through the pipe, larger ones in shared memory.
PIPE_LIMIT = 1 << 20

# Encodings of one array: stored as is, narrowed to fewer bytes, or as runs that count up
# by a fixed step (0: document numbers, 1: positions).
RAW, NARROW, RUNS = "raw", "narrow", "runs"


class WorkerBatch:
    """A dict of numpy arrays that unpickles as a dict of tensors with the same values."""

    def __init__(self, arrays: Mapping[str, np.ndarray]):
        self.arrays = dict(arrays)

    def __reduce__(self):
        if sum(array.nbytes for array in self.arrays.values()) > PIPE_LIMIT:
            return _unchanged, (one_storage(self.arrays),)
        fields, parts = [], []
        for key, array in self.arrays.items():
            kind, extra, payload = encode(np.ascontiguousarray(array))
            sizes = [part.nbytes for part in payload]
            fields.append((key, array.dtype.str, array.shape, kind, extra, sizes))
            parts.extend(payload)
        buffer = bytearray(sum(_aligned(part.nbytes) for part in parts))
        view, offset = np.frombuffer(buffer, dtype=np.uint8), 0
        for part in parts:
            view[offset : offset + part.nbytes] = part.reshape(-1).view(np.uint8)
            offset += _aligned(part.nbytes)
        return _decode_batch, (fields, buffer)


def encode(array: np.ndarray) -> tuple[str, Any, list[np.ndarray]]:
    """`(kind, extra, payload arrays)` for one array: runs when they take under a quarter of
    the raw bytes (16 bytes a run), else the values in fewer bytes when they fit, else raw."""
    if array.dtype.kind not in "iu" or array.size < 64:
        return RAW, None, [array]
    flat = array.reshape(-1)
    for step in (0, 1):
        breaks = np.flatnonzero(flat[1:] - flat[:-1] != step) + 1
        if (len(breaks) + 1) * 16 * 4 < array.nbytes:
            starts = np.concatenate(([0], breaks)).astype(np.int64)
            return RUNS, step, [starts, flat[starts].astype(np.int64)]
    low, high = int(flat.min()), int(flat.max())
    for narrow in (np.uint8, np.uint16, np.uint32):
        if low >= 0 and high <= np.iinfo(narrow).max and np.dtype(narrow).itemsize < array.itemsize:
            return NARROW, np.dtype(narrow).str, [flat.astype(narrow)]
    return RAW, None, [array]


def decode(kind: str, extra: Any, dtype: np.dtype, shape: tuple, payload: list[np.ndarray]):
    """The array `encode` described (RAW: a view of the payload, no copy)."""
    if kind == RAW:
        return payload[0].view(dtype).reshape(shape)
    if kind == NARROW:
        return payload[0].view(extra).astype(dtype).reshape(shape)
    starts, values = (part.view(np.int64) for part in payload)
    size = int(np.prod(shape))
    out = np.empty(size, dtype=dtype)
    counts = np.diff(np.append(starts, size))
    number_pieces(out, np.ascontiguousarray(starts), counts, np.ascontiguousarray(values), extra)
    return out.reshape(shape)


def _decode_batch(fields: list, buffer: bytearray) -> dict[str, torch.Tensor]:
    raw = np.frombuffer(buffer, dtype=np.uint8)
    out, offset = {}, 0
    for key, dtype, shape, kind, extra, sizes in fields:
        payload = []
        for size in sizes:
            payload.append(raw[offset : offset + size])
            offset += _aligned(size)
        out[key] = torch.from_numpy(decode(kind, extra, np.dtype(dtype), tuple(shape), payload))
    return out


def _aligned(size: int) -> int:
    """Parts start at multiples of 8 bytes, so every view of the buffer is aligned."""
    return -(-size // 8) * 8


def _unchanged(value: Any) -> Any:
    return value


def one_storage(batch: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """The batch's arrays as tensors that are views of one storage: sent from a worker, that
    is one shared-memory file instead of one per field."""
    sizes = [_aligned(array.nbytes) for array in batch.values()]
    buffer = torch.empty(sum(sizes), dtype=torch.uint8)
    out, offset = {}, 0
    for (key, array), size in zip(batch.items(), sizes, strict=True):
        tensor = buffer[offset : offset + array.nbytes].view(torch.from_numpy(array[:0]).dtype)
        tensor.numpy()[...] = np.ascontiguousarray(array).reshape(-1)
        out[key] = tensor.view(array.shape)
        offset += size
    return out
