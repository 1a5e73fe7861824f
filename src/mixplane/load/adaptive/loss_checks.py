"""Checks of the loss a training loop hands to `Feedback.observe`, against its batch.

Token counts come from the loss's shape, so a loss of another shape than the batch's tokens
(or a `loss_mask` of another shape than the loss) would count wrong: refused, with what to
pass instead. Validation losses are checked against the policy's components.

Example:
    >>> batch = {"component": torch.zeros(2), "input_ids": torch.zeros(2, 8)}
    >>> loss_shape_problem(torch.zeros(2, 7), batch) is None
    True
    >>> loss_shape_problem(torch.zeros(2, 1), batch).split(",")[0]
    'loss_per_token has 1 tokens a sequence'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch


def loss_shape_problem(loss: Any, batch: dict[str, Any]) -> str | None:
    """What is wrong with the shape of `loss` (or the batch's `loss_mask`), or None.

    The loss is `[batch, tokens]` of floats: `tokens` is the length of `labels` when the
    batch has them with a `loss_mask` (`labels: true`), one fewer when it has them without
    (`labels: huggingface`, which models shift), else `seq_len` or `seq_len - 1` (no target
    for the last position).
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
    if isinstance(labels, torch.Tensor) and batch.get("loss_mask") is None:
        # `labels: huggingface`: the model shifts them, so position t's loss is label t + 1's
        # and the last position has none; a loss of every position would count the -100s.
        allowed = {int(labels.shape[-1]) - 1}
    elif isinstance(labels, torch.Tensor):
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


def validation_losses(
    given: Mapping[str, float], names: list[str], skip_nonfinite: bool = False
) -> np.ndarray:
    """`given` (component name to loss per token) as an array over `names`, nan where a
    component has none; a ValueError says what is wrong with it. A nan or inf value is an
    error, or with `skip_nonfinite` left out (nan).

    Example:
        >>> validation_losses({"web": 2.5}, ["wiki", "web"]).tolist()
        [nan, 2.5]
    """
    if not isinstance(given, Mapping) or not set(given) <= set(names):
        unknown = sorted(set(given) - set(names)) if isinstance(given, Mapping) else given
        raise ValueError(
            f"validation_loss must map the policy's components ({', '.join(names)}) to a "
            f"loss per token; got {unknown!r}"
        )
    values = np.full(len(names), np.nan)
    for name, value in given.items():
        try:
            values[names.index(name)] = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"validation_loss of {name!r} is not a number: {value!r}") from None
    bad = [
        f"{n}={values[names.index(n)]}" for n in given if not np.isfinite(values[names.index(n)])
    ]
    if bad and not skip_nonfinite:
        raise ValueError(
            f"validation losses must be finite, got {', '.join(bad)} (set on_nonfinite: skip "
            "in the mixture's policy to leave such values out)"
        )
    values[~np.isfinite(values)] = np.nan
    return values
