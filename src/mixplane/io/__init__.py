"""Reading and writing through fsspec URLs: local paths, s3://, gs://, http(s)://, hf://.

Every other part of mixplane reads and writes through here.
"""

from mixplane.io.urls import expand_braces, expand_inputs, open_url, url_filesystem

__all__ = ["expand_braces", "expand_inputs", "open_url", "url_filesystem"]
