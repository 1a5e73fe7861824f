"""Checks of the loss a training loop hands to `Feedback.observe`, against its batch.

Token counts come from the loss's shape, so a loss of another shape than the batch's tokens
(or a `loss_mask` of another shape than the loss) would count wrong: refused, with what to
pass instead.

Example:
    >>> batch = {"component": torch.zeros(2), "input_ids": torch.zeros(2, 8)}
    >>> loss_shape_problem(torch.zeros(2, 7), batch) is None
    True
    >>> loss_shape_problem(torch.zeros(2, 1), batch).split(",")[0]
    'loss_per_token has 1 tokens a sequence'
"""

from __future__ import annotations

from typing import Any

import torch


def loss_shape_problem(loss: Any, batch: dict[str, Any]) -> str | None:
    """What is wrong with the shape of `loss` (or the batch's `loss_mask`), or None.

    The loss is `[batch, tokens]` of floats: `tokens` is the length of `labels` when the
    batch has them, else `seq_len` or `seq_len - 1` (no target for the last position).
    """
    if not isinstance(loss, torch.Tensor) or not loss.is_floating_point():
        return (
            "observe expects the unreduced loss per token as a floating-point tensor, "
            f"[batch, tokens]; got {type(loss).__name__} {getattr(loss, 'dtype', '')}".rstrip()
        )
    sequences = int(batch["component"].shape[0])
    if loss.dim() != 2 or loss.shape[0] != sequences:
        return (
            f"observe expects the unreduced loss per token, [batch, tokens]; got shape "
            f"{tuple(loss.shape)} for a batch of {sequences} sequences"
        )
    labels, ids = batch.get("labels"), batch.get("input_ids")
    if isinstance(labels, torch.Tensor):
        allowed = {int(labels.shape[-1])}
    elif isinstance(ids, torch.Tensor):
        allowed = {int(ids.shape[-1]), int(ids.shape[-1]) - 1}
    else:
        return "observe needs the batch's `input_ids` (or `labels`) to check the loss's shape"
    if int(loss.shape[1]) not in allowed:
        expected = " or ".join(str(n) for n in sorted(allowed, reverse=True))
        return (
            f"loss_per_token has {loss.shape[1]} tokens a sequence, but the batch's sequences "
            f"have {expected} tokens with a target: pass the unreduced loss of every token "
            "(reduction='none'), one row per sequence"
        )
    mask = batch.get("loss_mask")
    if mask is not None and (not isinstance(mask, torch.Tensor) or mask.shape != loss.shape):
        return (
            f"the batch's loss_mask has shape {tuple(getattr(mask, 'shape', ()))}, the loss "
            f"{tuple(loss.shape)}: compute the loss over the batch's labels, one value a label"
        )
    return None
