"""PyTorch adapter: an `AudioTextDataset` as a `DataLoader` whose batches follow the stream.

DataLoader workers take the rank's batches in turn (worker w of N: batches w, w + N, ...),
so the DataLoader, which asks its workers in turn, yields them in the stream's order; the
training process checks and counts each batch the loop receives, so `dataset.state_dict()`
is exact although the workers read ahead. Arrays arrive as tensors, `text` as a list of str.

Example:
    >>> loader = audio_text_loader(dataset, num_workers=2)  # doctest: +SKIP
    >>> next(iter(loader))["audio"].shape  # doctest: +SKIP
    torch.Size([23, 218880])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mixplane.load.audio.dataset import AudioTextDataset
from mixplane.load.torch.adapter import as_tensors, loader_options
from mixplane.load.torch.following import FollowedBatches, FollowingLoader


class TorchAudioTextDataset(FollowedBatches):
    """Yields the dataset's batches as dicts of tensors (one batch per item)."""

    dataset: AudioTextDataset

    def worker_batches(self, workers: int, worker: int) -> Iterator[dict[str, Any]]:
        # As tensors, which reach the training process in shared memory: an audio batch is
        # megabytes (about 20 MB of waveform, mask and log-mel for 32 clips of 6 s), where
        # the pipe that `WorkerBatch` uses for token batches costs the training process a
        # copy and an unpickling per byte (measured in docs/benchmarks.md, audio-text
        # loading).
        return map(as_tensors, self.dataset.worker_batches(workers, worker))

    def __len__(self) -> int:
        return len(self.dataset)


class AudioTextLoader(FollowingLoader):
    """A DataLoader over a `TorchAudioTextDataset` that follows the batches the loop
    receives; `state_dict()` and `load_state_dict()` are the dataset's."""

    dataset: TorchAudioTextDataset


def audio_text_loader(
    dataset: AudioTextDataset, num_workers: int = 0, **options: Any
) -> AudioTextLoader:
    """A DataLoader yielding the dataset's batches in order that follows what the loop
    receives. `options` go to the DataLoader (`persistent_workers`, `pin_memory`,
    `prefetch_factor`, `multiprocessing_context`...); the batches are the dataset's."""
    error = "the batches are the dataset's (AudioTextDataset(batch_seconds=... or batch_size=...))"
    options = loader_options(options, error)
    adapter = TorchAudioTextDataset(dataset)
    adapter.tracked = True
    return AudioTextLoader(adapter, batch_size=None, num_workers=num_workers, **options)


__all__ = ["AudioTextLoader", "TorchAudioTextDataset", "audio_text_loader"]
