"""Loading image-text mixtures: batches of normalized images and tokenized captions, blended
by sample weights, split over ranks and DataLoader workers, resumable exactly.

numpy first: `ImageTextDataset` yields numpy batches; `mixplane.load.images.torch` has the
PyTorch adapter (`image_text_loader`).

Example:
    >>> from mixplane.load.images import ImageTextDataset  # doctest: +SKIP
    >>> from mixplane.load.images.torch import image_text_loader  # doctest: +SKIP
    >>> dataset = ImageTextDataset("mixture.yaml", batch_size=256, tokenizer=tokenizer)
    ... # doctest: +SKIP
    >>> loader = image_text_loader(dataset, num_workers=8)  # doctest: +SKIP
    >>> shards = ImageTextDataset("clean-images/", batch_size=256, tokenizer=tokenizer)
    ... # doctest: +SKIP
"""

from mixplane.load.images.batch import CLIP_MEAN, CLIP_STD, BadImageError
from mixplane.load.images.dataset import ImageTextDataset
from mixplane.load.images.plan import EpochPlan
from mixplane.load.images.resolve import ResolvedImages, resolve_images
from mixplane.load.images.shards import resolve_shards

__all__ = [
    "CLIP_MEAN",
    "CLIP_STD",
    "BadImageError",
    "EpochPlan",
    "ImageTextDataset",
    "ResolvedImages",
    "resolve_images",
    "resolve_shards",
]
