"""A synthetic raw corpus for demos, tests and benchmarks, with its ground truth.

Example:
    >>> from mixplane.synth import generate_corpus
    >>> summary = generate_corpus("/tmp/corpus", docs=2000, seed=1)  # doctest: +SKIP
"""

from mixplane.synth.corpus import generate_corpus
from mixplane.synth.images import ImageSynthSummary, evaluate_image_dedup, generate_image_corpus
from mixplane.synth.summary import SynthSummary

__all__ = [
    "ImageSynthSummary",
    "SynthSummary",
    "evaluate_image_dedup",
    "generate_corpus",
    "generate_image_corpus",
]
