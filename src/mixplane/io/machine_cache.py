"""Where the machine's cache lives: remote catalogs (`load.remote.catalog_copy`), shard
metadata (`catalog.mirror`), token and image shards (`load.remote.shard_cache`), resolved
plans (`load.resolve.plan_cache`) and built URL block lists (`stages.urlfilter.domains`).

Example:
    >>> cache_root("/tmp/cache")
    '/tmp/cache'
"""

from __future__ import annotations

import os

DEFAULT_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "mixplane")


def cache_root(cache_dir: str | None) -> str:
    """The cache directory: the given one, else $MIXPLANE_CACHE, else ~/.cache/mixplane."""
    return cache_dir or os.environ.get("MIXPLANE_CACHE", DEFAULT_CACHE)
