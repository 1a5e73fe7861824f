"""How a DataLoader worker's batch reaches the training process: its arrays pickled into the
worker's pipe, wide integers in the fewest bytes that hold them.

A worker returns each item pickled through its result pipe. Tensors would travel one by one
through a new shared-memory file whose descriptor is passed over a socket (about a
millisecond per tensor). `WorkerBatch` sends the batch's numpy arrays instead, pickled by
numpy, and unpickles them as tensors over the arrays numpy rebuilt (numpy takes the
unpickled bytes as their memory, writable, without another copy).

Moving bytes through the pipe costs both processes CPU, so an integer array of 4 or 8 bytes
a value whose values fit in 1 or 2 (document numbers within a sequence, positions) travels
narrowed and is widened on arrival, if it is large: one pass over it on each side, which
costs less than the bytes it saves (at 64 x 2048 tokens, a third of the CPU of sending
them as they are). Tried and dropped (docs/benchmarks.md, "Worker transfer"): run-length
encoding of document numbers (finding the runs cost more than their bytes), and large
batches in one shared-memory file (a new file per batch costs more than the pipe, at 1 MB
as at 24 MB).

The DataLoader also pays a fixed cost per message, whatever its size (asking a worker for
it, waking the training process, unpickling a dict): about 0.4 ms of CPU with two workers,
nearly three times that of moving the 96 KiB of a batch of 8 x 2048 uint16 tokens (from
the bench's floor with 1 and 4 batches a message). Small batches therefore travel several
to a message, a group of consecutive batches of the stream that the training process
splits again (`group_size` chooses how many, `split_group` splits them).

Example:
    >>> import pickle
    >>> batch = {"ids": np.arange(6).reshape(2, 3), "doc": np.zeros((2, 3), np.int32)}
    >>> tensors = pickle.loads(pickle.dumps(WorkerBatch(batch)))
    >>> tensors["ids"].tolist(), tensors["doc"].dtype
    ([[0, 1, 2], [3, 4, 5]], torch.int32)
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

# Arrays smaller than this travel as they are: measured with two workers, narrowing paid
# from 128 KiB of document numbers on (16 x 2048) and cost a little at 64 KiB (8 x 2048).
NARROW_FROM = 1 << 17
NARROWER = [np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)]
# Batches are grouped into messages of up to about this many bytes, at most MAX_GROUP of
# them: measured with two workers, 4 batches of 8 x 2048 tokens (96 KiB each) a message cost
# less than half the CPU per batch of one (docs/benchmarks.md, "Worker transfer"), while
# batches of 512 KiB and more gain little from company.
GROUP_BYTES = 1 << 19
MAX_GROUP = 4
UNSIGNED = {4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}


class WorkerBatch:
    """A dict of numpy arrays that unpickles as a dict of tensors with the same values."""

    def __init__(self, arrays: Mapping[str, np.ndarray]):
        self.arrays = dict(arrays)

    def __reduce__(self):
        travelling, widths = {}, {}
        for key, array in self.arrays.items():
            if isinstance(array, list):  # strings (an audio batch's transcripts) go as they are
                travelling[key] = array
                continue
            narrow = narrowest(array)
            if narrow is not None:
                travelling[key], widths[key] = array.astype(narrow), array.dtype.str
            else:
                travelling[key] = np.asarray(array, order="C")
        return arrived, (travelling, widths)


def narrowest(array: np.ndarray) -> np.dtype | None:
    """The smallest unsigned dtype that holds the values of an integer array of 4 or 8 bytes
    a value, if it is smaller; None for other arrays, small ones, or when none is smaller.

    Example:
        >>> documents = np.repeat(np.arange(100, dtype=np.int32), 2048)
        >>> narrowest(documents), narrowest(documents + 300), narrowest(documents[:10])
        (dtype('uint8'), dtype('uint16'), None)
    """
    if array.dtype.kind not in "iu" or array.itemsize < 4 or array.nbytes < NARROW_FROM:
        return None
    # Seen as unsigned, a negative value is larger than any narrower type holds: one pass
    # finds the largest value and rules out negative ones.
    high = int(array.view(UNSIGNED[array.itemsize]).max())
    for dtype in NARROWER:
        if dtype.itemsize < array.itemsize and high <= np.iinfo(dtype).max:
            return dtype
    return None


def arrived(arrays: Mapping[str, np.ndarray], widths: Mapping[str, str]) -> dict[str, torch.Tensor]:
    """In the training process: the batch as tensors, narrowed arrays widened back."""
    return as_tensors(
        {key: a.astype(widths[key]) if key in widths else a for key, a in arrays.items()}
    )


def group_size(batch_bytes: int) -> int:
    """How many batches of `batch_bytes` bytes travel in one message: up to `GROUP_BYTES` a
    message, at most `MAX_GROUP` batches, at least one.

    Example:
        >>> group_size(96 << 10), group_size(192 << 10), group_size(768 << 10)
        (4, 2, 1)
    """
    return max(1, min(MAX_GROUP, GROUP_BYTES // max(1, batch_bytes)))


def split_group(group: Mapping[str, torch.Tensor], rows: int) -> list[dict[str, torch.Tensor]]:
    """The batches of `rows` rows in a message of consecutive batches, as views (the last
    one shorter if the stream ended within it).

    Example:
        >>> group = {"index": torch.arange(5), "ids": torch.zeros(5, 3)}
        >>> [b["index"].tolist() for b in split_group(group, 2)]
        [[0, 1], [2, 3], [4]]
    """
    total = len(next(iter(group.values())))
    return [
        {key: value[start : start + rows] for key, value in group.items()}
        for start in range(0, total, rows)
    ]


def as_tensors(batch: Mapping[str, np.ndarray]) -> dict[str, torch.Tensor]:
    """The batch's arrays as tensors over the same memory (cheaper than the DataLoader's
    own conversion, which inspects every value); lists (of strings) as they are."""
    return {
        key: value if isinstance(value, list) else torch.from_numpy(value)
        for key, value in batch.items()
    }
