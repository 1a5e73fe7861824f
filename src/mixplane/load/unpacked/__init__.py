"""Unpacked text mixtures (`packing: none`): one document per sample, padded batches, by
fixed batch size or length bucketing (see `mix.unpacked`, `plan.buckets`)."""

from mixplane.load.unpacked.dataset import UnpackedDataset

__all__ = ["UnpackedDataset"]
