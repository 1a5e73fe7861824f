"""A synthetic audio-text corpus: spoken clips with transcripts, planted duplicates and bad
files, with its ground truth (see `mixplane.synth.audio.corpus`).

Example:
    >>> from mixplane.synth.audio import generate_audio_corpus
    >>> truth = generate_audio_corpus("/tmp/audio", samples=200, seed=1)  # doctest: +SKIP
"""

from mixplane.synth.audio.corpus import AudioSynthSummary, generate_audio_corpus, read_audio_truth

__all__ = ["AudioSynthSummary", "generate_audio_corpus", "read_audio_truth"]
