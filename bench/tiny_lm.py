"""A tiny pre-norm causal transformer for the benchmarks that train a model on CPU.

Used by the adaptive-mixture experiment (bench/adaptive) and the quality-classifier ablation
(bench/classify/ablation.py). Only the data differs between their runs; the model is this.

Example:
    model = TinyLM(vocab=2048, seq_len=128, dim=128, layers=2)
    loss = token_losses(model, batch["input_ids"], batch["labels"]).mean()
"""

from __future__ import annotations

import math

import torch
from torch import nn


class TinyLM(nn.Module):
    """Token and position embeddings, `layers` pre-norm transformer layers with causal
    attention (MLP 4x wide, no dropout), a final norm and a linear head."""

    def __init__(self, vocab: int, seq_len: int, dim: int = 96, layers: int = 3, heads: int = 4):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(seq_len, dim)
        layer = nn.TransformerEncoderLayer(
            dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq_len))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        length = ids.shape[1]
        x = self.embed(ids) + self.position(torch.arange(length))
        x = self.blocks(x, mask=self.mask[:length, :length], is_causal=True)
        return self.head(self.norm(x))


def token_losses(
    model: TinyLM, ids: torch.Tensor, labels: torch.Tensor | None = None
) -> torch.Tensor:
    """The unreduced next-token loss, [batch, tokens]: of `labels` given `ids`, or without
    labels of `ids[:, 1:]` given `ids[:, :-1]`."""
    if labels is None:
        ids, labels = ids[:, :-1], ids[:, 1:]
    logits = model(ids)
    return nn.functional.cross_entropy(
        logits.reshape(-1, model.vocab), labels.reshape(-1), reduction="none"
    ).reshape(labels.shape)


def warmup_cosine(warmup: int, steps: int):
    """The learning-rate factor of step `s`: linear warm-up over `warmup` steps, times a
    cosine decay to zero at `steps` (for `torch.optim.lr_scheduler.LambdaLR`)."""
    return lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s / steps))
