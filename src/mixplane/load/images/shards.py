"""From media shards named directly (a folder, a brace pattern, a list) to concrete samples,
with no catalog: every sample of every shard, one component, in the order given.

Image and audio shards share one container (`store.images.format`), so both loaders read
them through here; `kind` (`image_text` or `audio_text`) names which the spec is of.
A source is a folder of shards (its `*.tar`, in name order), a shard's `.tar` URL, or
a brace or glob pattern of them; a list keeps its order. Every `.tar` needs the `.idx`
beside it that `mixplane process` writes (`output_format: webdataset`): it counts the
samples and finds them without reading the tar. The fingerprint covers the seed and each
shard's name and sample offsets (not its folder), so a saved state resumes on the same
shards, wherever they are, and on no others.

Example:
    >>> resolved = resolve_shards("clean-images/", seed=0)  # doctest: +SKIP
    >>> resolved.names, resolved.counts  # doctest: +SKIP
    (['shards'], [1200])
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from mixplane.errors import ConfigError, MixplaneError
from mixplane.io.urls import expand_inputs
from mixplane.load.images.resolve import ResolvedImages
from mixplane.mix.spec import MixtureSpec
from mixplane.store.images import ImageShardReader
from mixplane.store.images.format import IDX, TAR

COMPONENT = "shards"
Sources = str | Path | Sequence[str | Path]
# What each kind's shards are called in messages, and the loader that reads them.
KINDS = {"image_text": ("image", "ImageTextDataset"), "audio_text": ("audio", "AudioTextDataset")}


def resolve_shards(
    sources: Sources,
    seed: int = 0,
    storage_options: dict[str, Any] | None = None,
    kind: str = "image_text",
) -> ResolvedImages:
    """Every sample of the `kind` shards `sources` names, as one component `shards`."""
    media, loader = KINDS[kind]
    options = dict(storage_options or {})
    urls = shard_urls(sources, options, media)
    shards, counts, digest = [], [], hashlib.sha256()
    for url in urls:
        folder, stem = posixpath.split(url[: -len(TAR)])
        try:
            reader = ImageShardReader(folder, stem, options)
        except MixplaneError as error:
            raise ConfigError(
                f"{url} is not an {media} shard mixplane can read by sample ({error}); "
                f"{loader} reads the shards `mixplane process` writes with "
                "output_format: webdataset (a .tar with its .idx)"
            ) from None
        shards.append((reader.folder, stem))
        counts.append(len(reader))
        # Names and sample offsets, not folders: the same shards moved elsewhere still match.
        digest.update(orjson.dumps([stem, len(reader)]) + reader.offsets.tobytes())
    total = sum(counts)
    if total == 0:
        raise ConfigError(f"the {media} shards {_named(sources)} hold no sample")
    spec = MixtureSpec.parse({"kind": kind, "seed": seed, "components": {COMPONENT: {"weight": 1}}})
    shard = np.repeat(np.arange(len(shards), dtype=np.int64), counts)
    sample = np.concatenate([np.arange(count, dtype=np.int64) for count in counts])
    content = orjson.dumps({"kind": f"{media}_shards", "spec": spec.fingerprint()})
    return ResolvedImages(
        spec=spec,
        names=[COMPONENT],
        shards=tuple(shards),
        shard_dataset=tuple(folder for folder, _ in shards),
        shard=[shard],
        sample=[sample],
        weights=np.ones(1),
        fingerprint=hashlib.sha256(content + digest.digest()).hexdigest()[:32],
        storage_options=options,
    )


def shard_urls(
    sources: Sources, storage_options: dict[str, Any], media: str = "image"
) -> list[str]:
    """The `.tar` URLs `sources` names, each once, in order (sorted within a source)."""
    items = [sources] if isinstance(sources, str | Path) else list(sources)
    if not items:
        raise ConfigError(f"no {media} shards given: name a folder, a .tar or a list of them")
    found: dict[str, None] = {}
    for item in items:
        tars = [url for url, _ in expand_inputs(str(item), storage_options) if url.endswith(TAR)]
        if not tars:
            raise ConfigError(
                f"{item} holds no {media} shard (.tar with its {IDX}); give the folder "
                "`mixplane process` wrote with output_format: webdataset"
            )
        found.update(dict.fromkeys(tars))
    return list(found)


def is_shards(source: Any) -> bool:
    """Whether a media loader's first argument names shards rather than a mixture: a
    list of them, or a path that is not a YAML or JSON spec file.

    Example:
        >>> is_shards("clean-images/"), is_shards("mixture.yaml"), is_shards({"components": {}})
        (True, False, False)
    """
    if isinstance(source, list | tuple):
        return True
    if isinstance(source, str | Path):
        return not str(source).lower().endswith((".yaml", ".yml", ".json"))
    return False


def _named(sources: Sources) -> str:
    if isinstance(sources, str | Path):
        return repr(str(sources))
    return ", ".join(repr(str(s)) for s in sources)
