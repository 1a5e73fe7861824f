"""One dataset's part of a takedown: the documents it removes and the folder of the new
version.

Example:
    >>> new_folder(catalog.get("web@3"), None)  # doctest: +SKIP
    '/data/web-takedown-4'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from mixplane.catalog.dataset import normalize_uri
from mixplane.catalog.registry import DatasetVersion
from mixplane.catalog.takedown.matches import VersionMatches
from mixplane.catalog.takedown.request import TakedownRequest
from mixplane.io.atomic import join_url

_SUFFIX = re.compile(r"-takedown-\d+$")


@dataclass(frozen=True)
class VersionPlan:
    """One dataset's part of a takedown: what it removes and where the new version goes."""

    matches: VersionMatches
    manifest: dict[str, Any]  # the old version's manifest as registered
    folder: str

    @property
    def version(self) -> DatasetVersion:
        return self.matches.version

    @cached_property
    def affected(self) -> dict[int, np.ndarray]:
        """Shard index -> the rows removed from it."""
        return {shard: self.matches.rows_of(shard) for shard in self.matches.shards()}

    def entry(self, request: TakedownRequest, at: str) -> dict[str, Any]:
        """This takedown as the manifest's `takedowns` list records it."""
        return {
            **request.describe(),
            "at": at,
            "removed": {
                "documents": self.matches.documents,
                "tokens": self.matches.tokens,
                "shards_rewritten": self.rewritten(),
            },
        }

    def rewritten(self) -> int:
        """Shards written anew (those left empty are dropped, not written)."""
        return sum(
            1
            for shard, rows in self.affected.items()
            if len(rows) < self.version.shards[shard].documents
        )


def new_folder(version: DatasetVersion, output: str | None) -> str:
    """Where the version made from `version` goes: beside its folder as
    `FOLDER-takedown-N` (N the new version number; a `-takedown-K` ending is replaced),
    or `OUTPUT/NAME-takedown-N`."""
    number = version.version + 1
    if output:
        return join_url(normalize_uri(output), f"{version.name}-takedown-{number}")
    return f"{_SUFFIX.sub('', version.uri)}-takedown-{number}"
