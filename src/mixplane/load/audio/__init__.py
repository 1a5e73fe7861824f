"""Loading audio-text mixtures: batches of clips (mono, one sample rate, zero-padded) and
their transcripts, batched by a budget of seconds (length bucketing) or a fixed size, blended
by sample or seconds weights, split over ranks and DataLoader workers, resumable exactly.

numpy first: `AudioTextDataset` yields numpy batches; `mixplane.load.audio.torch` has the
PyTorch adapter (`audio_text_loader`).

Example:
    >>> from mixplane.load.audio import AudioTextDataset  # doctest: +SKIP
    >>> from mixplane.load.audio.torch import audio_text_loader  # doctest: +SKIP
    >>> dataset = AudioTextDataset("speech.yaml", batch_seconds=320, sample_rate=16000)
    ... # doctest: +SKIP
    >>> loader = audio_text_loader(dataset, num_workers=4)  # doctest: +SKIP
"""

from mixplane.load.audio.batch import BadAudioError
from mixplane.load.audio.dataset import AudioTextDataset
from mixplane.load.audio.plan import Batching
from mixplane.load.audio.state import AudioState

__all__ = ["AudioState", "AudioTextDataset", "BadAudioError", "Batching"]
