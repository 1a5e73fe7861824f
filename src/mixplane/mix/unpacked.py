"""Settings of an unpacked text mixture (`packing: none`): padding and length bucketing.

With `packing: none` every sample is one whole document, cut to its first `seq_len` tokens
(the rest of a longer document is dropped, not carried into another sample), and batches
are padded to their longest sample, rounded up to `pad_to_multiple_of`. With `bucketing`,
samples of similar length are batched together and a batch holds as many samples as fit in
`max_tokens_per_batch` tokens, padding included.

Example:
    >>> BucketingSpec(max_tokens_per_batch=16384).window
    8192
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# Fields of a packed text mixture that an unpacked one cannot honour (yet), and why.
UNPACKED_REFUSES = {
    "shifted_labels": "labels: true packs seq_len + 1 tokens per sequence; an unpacked batch "
    "has input_ids and attention_mask (a model shifts them itself): use labels: huggingface",
    "shuffle_window": "shuffle_window is for packed mixtures; leave it out",
    "schedule": "schedule steps count fixed sequences per step, which bucketed batches do not "
    "have; use static weights with packing: none",
    "policy": "adaptive policies need fixed steps of sequences; use static weights with "
    "packing: none",
}
# Fields that mean something only with packing: none.
UNPACKED_ONLY = ("pad_id", "pad_to_multiple_of", "bucketing")


class BucketingSpec(BaseModel):
    """Batches of samples of similar length, sized by a budget of padded tokens.

    The global stream of documents is cut into windows of `window` documents (rounded up to
    a multiple of the world size); each window's documents are sorted by length, cut into
    batches of at most `max_tokens_per_batch` padded tokens, grouped into steps of one batch
    per rank, and the steps are shuffled (seeded).
    """

    model_config = ConfigDict(extra="forbid")

    max_tokens_per_batch: int = Field(
        gt=0, description="padded tokens (rows x padded length) a batch may hold at most"
    )
    window: int = Field(
        8192,
        gt=0,
        description="documents sorted together; larger pads less, smaller keeps lengths "
        "mixed over a shorter stretch of training",
    )


def unpacked_problems(fields: Any, given: set[str]) -> list[str]:
    """What is wrong with an unpacked (or packed) text mixture's fields, one line each.

    `fields` is the mixture spec, `given` the fields set explicitly.
    """
    if fields.packing != "none":
        # A field given its default (a spec written out whole, as the plan service's
        # clients send it) asks for nothing.
        defaults = type(fields).model_fields
        return [
            f"{name} needs packing: none"
            for name in UNPACKED_ONLY
            if name in given and getattr(fields, name) != defaults[name].default
        ]
    problems = [why for name, why in UNPACKED_REFUSES.items() if getattr(fields, name)]
    if fields.kind != "text":
        problems.append("packing: none is for text mixtures")
    bucketing = fields.bucketing
    longest = padded_length(fields.seq_len or 0, fields.pad_to_multiple_of)
    if bucketing is not None and bucketing.max_tokens_per_batch < longest:
        problems.append(
            f"bucketing.max_tokens_per_batch {bucketing.max_tokens_per_batch} cannot hold one "
            f"sample of seq_len {fields.seq_len} padded to a multiple of "
            f"{fields.pad_to_multiple_of} ({longest} tokens); raise it or lower seq_len"
        )
    return problems


def padded_length(length: int, multiple: int) -> int:
    """`length` rounded up to a multiple of `multiple`.

    >>> padded_length(13, 8), padded_length(16, 8), padded_length(13, 1)
    (16, 16, 13)
    """
    return -(-length // multiple) * multiple
