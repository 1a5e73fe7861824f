"""Image shards ("mixplane-images"): WebDataset-compatible tars with a sample index and
per-sample metadata Parquet; the writer and the indexed reader.

Example:
    >>> from mixplane.store.images import ImageShardReader
    >>> ImageShardReader("out", "part-00000").sample(0)["txt"]  # doctest: +SKIP
    b'a cat on a mat'
"""

from mixplane.store.images.format import FORMAT_NAME, FORMAT_VERSION, parse_members
from mixplane.store.images.reader import ImageShardReader
from mixplane.store.images.writer import ImageShardWriter, MissingImageError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ImageShardReader",
    "ImageShardWriter",
    "MissingImageError",
    "parse_members",
]
