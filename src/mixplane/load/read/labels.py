"""Which tokens of a block the loss is taken on, and labels as Hugging Face models take them.

Fine-tuning shards carry a loss mask (`.mask`, one byte per token); pretraining shards have
none (every token is trained on). A block's mask is copied from the shards' masks piece by
piece, as its tokens are, in compiled code.

Example:
    >>> arrays = {"input_ids": np.array([[5, 6, 7, 8]])}
    >>> with_unshifted_labels(arrays, None, np.array([0, 2]))["labels"].tolist()
    [[-100, 6, -100, 8]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mixplane.load._pieces import copy_pieces

if TYPE_CHECKING:
    from mixplane.load.read.assemble import PlannedBlock
    from mixplane.load.read.source import TokenSource

IGNORE_INDEX = -100  # what Hugging Face's losses leave out


def loss_mask(
    source: TokenSource, shape: tuple[int, ...], block: PlannedBlock
) -> np.ndarray | None:
    """1 where the loss is taken, per token of the block's rows: the stored masks of
    fine-tuning shards, 0 on the EOS appended to their documents (the template ends a turn
    its own way), 1 elsewhere. None when no shard of the mixture has a mask. The block's
    shards must be open (called while it is being filled)."""
    masked = source.masked
    if not masked.any():
        return None
    mask = np.ones(shape, dtype=np.uint8)
    chosen = masked[block.shard]
    if chosen.any():
        copy_pieces(
            mask,
            source.masks,
            block.shard[chosen],
            block.first[chosen],
            block.take[chosen],
            block.target[chosen],
        )
        ended = chosen[block.take < block.lengths]
        mask.reshape(-1)[block.eos_at[ended]] = 0
    return mask


def with_unshifted_labels(
    arrays: dict[str, np.ndarray], mask: np.ndarray | None, starts: np.ndarray
) -> dict[str, np.ndarray]:
    """Labels as Hugging Face models take them (they shift inside): the inputs, with -100
    where `mask` is 0 and at the first token of every document piece (flat positions
    `starts`), so no document is trained to follow the one packed before it."""
    labels = arrays["input_ids"].astype(np.int64)
    if mask is not None:
        labels[mask == 0] = IGNORE_INDEX
    labels.reshape(-1)[starts] = IGNORE_INDEX
    return arrays | {"labels": labels}
