"""From an image-text mixture to concrete samples: each component's query on the catalog.

Every leaf component's predicate becomes a catalog `Selection` (which samples of which image
shards match); the selected samples are listed per component as (shard, sample in shard)
over one shared list of shards. Overlaps between components follow the spec's `overlap`
rule, and the weights are the tree's leaf weights over sample counts.

Example:
    >>> spec = MixtureSpec.parse({"kind": "image_text", "catalog": "catalog.duckdb",
    ...     "components": {"photos": {"where": "width >= 256", "weight": 1}}})
    >>> resolved = resolve_images(spec)  # doctest: +SKIP
    >>> resolved.names, [len(s) for s in resolved.sample]  # doctest: +SKIP
    (['photos'], [1200])
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from mixplane.errors import ConfigError
from mixplane.io.atomic import is_local
from mixplane.mix.spec import MixtureSpec
from mixplane.mix.tree import MixtureTree

SAMPLE_BITS = 40  # a sample's key: shard number above these bits, index in shard below


@dataclass
class ResolvedImages:
    """The samples of every leaf component, over one shared list of image shards."""

    spec: MixtureSpec
    names: list[str]
    shards: tuple[tuple[str, str], ...]  # (folder URI, stem) of each shard number
    shard_dataset: tuple[str, ...]  # the dataset version (NAME@N) of each shard number
    shard: list[np.ndarray]  # per leaf, per sample: its shard number
    sample: list[np.ndarray]  # per leaf, per sample: its index in that shard
    weights: np.ndarray  # per leaf: its share of samples
    fingerprint: str  # of the spec and the exact data versions
    storage_options: dict[str, Any] = field(default_factory=dict)
    # Remote datasets' manifests as registered (the files of the shards read, with sizes
    # and hashes), by folder: what the node cache checks their copies against.
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def counts(self) -> list[int]:
        return [len(s) for s in self.sample]


def resolve_images(spec: MixtureSpec, catalog: Any = None) -> ResolvedImages:
    """Select every leaf's samples in the catalog (the spec's, or the `Catalog` given), for
    an image-text or audio-text mixture (media shards of the spec's kind)."""
    if spec.kind == "text":
        raise ConfigError(
            "this mixture is a text mixture (kind: text); read it with MixtureDataset, or set "
            "`kind: image_text` (or audio_text) for image-caption (or audio) components"
        )
    from mixplane.load.resolve.query import catalog_path, registered_manifest, select_leaf

    tree = MixtureTree(spec)
    if catalog is None:
        from mixplane.catalog import Catalog

        catalog = Catalog(catalog_path(spec), storage_options=spec.storage_options)
    numbering: dict[tuple[str, str], int] = {}
    shard_dataset: list[str] = []
    per_leaf: list[np.ndarray] = []
    infos: dict[str, str] = {}
    manifests: dict[str, dict[str, Any]] = {}
    with catalog.session() as session:
        for leaf in tree.leaves:
            keys = []
            for part in sorted(select_leaf(session, leaf, "sample"), key=lambda p: p.dataset):
                if part.documents == 0:
                    continue
                local, index = part.document_indices()
                mapping = np.empty(len(part.shards), dtype=np.int64)
                for number, stem in enumerate(part.shards):
                    key = (part.uri, stem)
                    if key not in numbering:
                        numbering[key] = len(numbering)
                        shard_dataset.append(part.dataset)
                    mapping[number] = numbering[key]
                keys.append((mapping[local] << SAMPLE_BITS) | index)
                infos[part.dataset] = ""
            per_leaf.append(np.concatenate(keys) if keys else np.zeros(0, np.int64))
        for version in session.resolve(sorted(infos)):
            if version.kind != spec.kind:
                what = {"tokens": "tokenized text"}.get(version.kind, f"{version.kind} data")
                raise ConfigError(
                    f"{version.ref} is {what}, not {spec.kind} data; an {spec.kind} "
                    f"mixture draws only from {spec.kind} datasets"
                )
            infos[version.ref] = version.fingerprint
            if not is_local(version.uri):
                stems = {stem for uri, stem in numbering if uri == version.uri}
                registered = session.registry.manifest(version.name, version.version)
                manifests[version.uri] = registered_manifest(registered, stems)
    per_leaf = settle_overlaps(tree.names, per_leaf, spec.overlap)
    counts = [len(keys) for keys in per_leaf]
    weights = tree.leaf_weights(counts)
    return ResolvedImages(
        spec=spec,
        names=tree.names,
        shards=tuple(numbering),
        shard_dataset=tuple(shard_dataset),
        shard=[keys >> SAMPLE_BITS for keys in per_leaf],
        sample=[keys & ((1 << SAMPLE_BITS) - 1) for keys in per_leaf],
        weights=weights,
        fingerprint=samples_fingerprint(spec, infos),
        storage_options=dict(spec.storage_options),
        manifests=manifests,
    )


def samples_fingerprint(spec: MixtureSpec, versions: dict[str, str]) -> str:
    """What a sample mixture's order depends on: the spec and the exact data (each version
    read, `NAME@N`, with its content fingerprint).

    Example:
        >>> spec = MixtureSpec.parse({"kind": "image_text", "components": {"a": {"weight": 1}}})
        >>> len(samples_fingerprint(spec, {"photos@1": "xxh3_128:00"}))
        32
    """
    data = sorted(versions.items())
    content = orjson.dumps({"kind": spec.kind, "spec": spec.fingerprint(), "data": data})
    return hashlib.sha256(content).hexdigest()[:32]


def settle_overlaps(names: list[str], keys: list[np.ndarray], rule: str) -> list[np.ndarray]:
    """Refuse samples matched by two components, give them to the first one listed, or
    allow them in each (`overlap: error | first | allow`).

    Example:
        >>> settle_overlaps(["a", "b"], [np.array([1, 2]), np.array([2, 3])], "first")
        [array([1, 2]), array([3])]
    """
    if rule == "allow":
        return keys
    taken = np.zeros(0, dtype=np.int64)
    settled = []
    for name, mine in zip(names, keys, strict=True):
        shared = np.isin(mine, taken)
        if shared.any():
            if rule == "error":
                earlier = names[: len(settled)]
                raise ConfigError(
                    f"component {name!r} shares {int(shared.sum()):,} samples with "
                    f"{', '.join(repr(n) for n in earlier)}; make their "
                    "predicates disjoint or set `overlap: first` (earlier components keep "
                    "shared samples) or `overlap: allow`"
                )
            mine = mine[~shared]
            if len(mine) == 0:
                raise ConfigError(
                    f"component {name!r}: every sample it matches belongs to an earlier "
                    "component (overlap: first); narrow the earlier predicates or drop it"
                )
        settled.append(mine)
        taken = np.union1d(taken, mine)
    return settled
