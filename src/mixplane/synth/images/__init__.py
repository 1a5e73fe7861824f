"""A synthetic image-caption corpus in WebDataset, img2dataset, folder and URL-list layouts,
with its ground truth (see `mixplane.synth.images.corpus` for the layout).

Example:
    >>> from mixplane.synth.images import generate_image_corpus
    >>> summary = generate_image_corpus("/tmp/images", samples=2000, seed=1)  # doctest: +SKIP
"""

from mixplane.synth.images.corpus import ImageSynthSummary, generate_image_corpus
from mixplane.synth.images.evaluate import evaluate_image_dedup

__all__ = ["ImageSynthSummary", "evaluate_image_dedup", "generate_image_corpus"]
