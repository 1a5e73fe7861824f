"""From a mixture spec to concrete documents: run each component's query on the catalog.

This is where the loader meets the catalog: every leaf component's predicate becomes a
selection (ranges of documents per shard), overlaps between components are checked or
resolved, and each document's token count is read (from shard indexes, or from the metadata
for remote data). Bad specs fail here, before any training step, with the component named.

Example:
    >>> resolved = resolve_mixture(MixtureSpec.from_yaml("mixture.yaml"))  # doctest: +SKIP
    >>> resolved.tree.names, [r.documents for r in resolved.ranges]  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import orjson

from mixplane.errors import ConfigError, InputError, MixplaneError
from mixplane.io.ahead import in_order
from mixplane.io.atomic import is_local
from mixplane.io.locks import locked
from mixplane.io.machine_cache import cache_root
from mixplane.load.plan import ranges as iv
from mixplane.load.plan.ranges import DocumentRanges, ShardKey
from mixplane.load.plan.resolved import ResolvedMixture, registered_manifests
from mixplane.load.read.source import TokenSource
from mixplane.load.remote.catalog_copy import LocalCatalog, open_catalog
from mixplane.load.resolve.plan_cache import (
    PresummedRanges,
    entry_folder,
    load_resolved,
    save_resolved,
)
from mixplane.load.resolve.takedowns import cached_pins, check_pins, flag_pins
from mixplane.mix.spec import MixtureSpec
from mixplane.mix.tree import MixtureTree

T = TypeVar("T")
REMOTE_READS_IN_FLIGHT = 16  # shards' token counts read side by side from object storage
PARALLEL_LEAVES = 4  # components queried at once

EVERYTHING = "TRUE"


def catalog_path(spec: MixtureSpec) -> str:
    """A local path of the mixture's catalog (remote catalogs are copied into the cache)."""
    return local_catalog(spec).path


def local_catalog(spec: MixtureSpec) -> LocalCatalog:
    """The mixture's catalog as a local file (a remote one copied into the machine's cache,
    once) and its content's identity."""
    if not spec.catalog:
        raise ConfigError("the mixture names no catalog; add `catalog: PATH` to it")
    try:
        return open_catalog(spec.catalog, spec.cache_dir, spec.storage_options)
    except InputError as error:
        raise ConfigError(f"the mixture's catalog: {error}") from None


def resolve_mixture(spec: MixtureSpec, catalog=None, use_cache: bool = True) -> ResolvedMixture:
    """Select every leaf's documents and read their token counts.

    With the spec's own catalog, the result is cached on disk (see `plan_cache`); a catalog
    object passed in is always queried.
    """
    if spec.kind == "image_text":
        raise ConfigError(
            "this is an image-text mixture (kind: image_text): read it with "
            "mixplane.load.images.ImageTextDataset, not MixtureDataset"
        )
    if spec.kind == "audio_text":
        raise ConfigError(
            "this is an audio-text mixture (kind: audio_text): read it with "
            "mixplane.load.audio.AudioTextDataset, not MixtureDataset"
        )
    MixtureTree(spec)  # the spec's own mistakes are reported before any file is opened
    if catalog is not None:
        check_pins(spec, catalog.path)
        return _resolve(spec, catalog)
    if spec.plan_url:  # the service checks the pins on its catalog
        from mixplane.load.resolve.plan_service import fetch_resolved

        return fetch_resolved(spec)
    local = local_catalog(spec)
    if not use_cache:
        check_pins(spec, local.path)
        return _query(spec, local.path)
    folder = entry_folder(spec, local, spec.cache_dir)
    flag_pins(spec, cached_pins(spec, local.path, folder))
    cached = load_resolved(spec, folder)
    if cached is None:
        # One process of the machine queries; the ranks that waited for it find the entry.
        os.makedirs(folder, exist_ok=True)
        with locked(os.path.join(folder, "resolve.lock")):
            cached = load_resolved(spec, folder)
            if cached is None:
                resolved = _query(spec, local.path)
                save_resolved(resolved, folder)
                # Mapped back from disk, so this process holds no copy of its own either.
                cached = load_resolved(spec, folder) or resolved
    return cached


def _query(spec: MixtureSpec, path: str) -> ResolvedMixture:
    from mixplane.catalog import Catalog  # DuckDB loads only when the catalog is queried

    # Remote shard metadata is copied into the machine's cache and queried there: the
    # components' queries and the token counts read below then make no round trips.
    metadata = cache_root(spec.cache_dir)
    return _resolve(spec, Catalog(path, spec.storage_options, metadata_cache=metadata))


def _resolve(spec: MixtureSpec, catalog) -> ResolvedMixture:
    tree = MixtureTree(spec)
    # One catalog session for every component: the registry and query engine open once.
    with catalog.session() as session:
        # Side by side: on object storage each query is a few round trips per file.
        with ThreadPoolExecutor(min(len(tree.leaves), PARALLEL_LEAVES)) as pool:
            selections = list(pool.map(lambda leaf: select_leaf(session, leaf), tree.leaves))
        selected, versions = [], {}
        for selection in selections:
            parts = []
            # Sorted by dataset so the document order never depends on how the catalog lists them.
            for part in sorted(selection, key=lambda p: p.dataset):
                if part.documents == 0:
                    continue
                keys = [(part.uri, stem) for stem in part.shards]
                parts.append(DocumentRanges.build(keys, part.shard, part.start, part.end))
                versions.setdefault(part.uri, part.dataset)
            # One dataset (the usual case): its ranges as they are, not copied by a join.
            selected.append(parts[0] if len(parts) == 1 else DocumentRanges.join(parts))
        selected = settle_overlaps(tree.names, selected, spec.overlap)
        shards, selected = _shared_shards(selected)
        infos = _dataset_infos(session, sorted(set(versions.values())), shards)
    eos_id, append = _eos_plan(spec, infos, {uri: versions[uri] for uri in versions})
    source = TokenSource(
        shards,
        eos_id,
        storage_options=spec.storage_options,
        cache_dir=spec.cache_dir,
        manifests=registered_manifests(infos),
    )
    appended = np.array([int(append[uri]) for uri, _ in shards], dtype=np.int64)

    def of_shard(number: int) -> tuple[np.ndarray, np.ndarray]:
        """A shard's document lengths (with appended EOS) and token offsets (running sums of
        stored lengths, as in its index)."""
        stored = source.stored_lengths(number)
        return stored + appended[number], np.cumsum(stored) - stored

    if source.remote.any():  # each read is a round trip: many in flight, used in order
        ahead = in_order(of_shard, range(len(shards)), REMOTE_READS_IN_FLIGHT)
        lengths, starts = _per_document(selected, len(shards), lambda n: _take(ahead, n))
    else:
        lengths, starts = _per_document(selected, len(shards), of_shard)
    fingerprint = mixture_fingerprint(spec, infos)
    return ResolvedMixture(
        spec, tree, shards, selected, lengths, starts, appended, eos_id, infos, fingerprint
    )


def settle_overlaps(
    names: list[str], selected: list[DocumentRanges], rule: str
) -> list[DocumentRanges]:
    """Refuse documents matched by two components, or give them to the first one listed."""
    if rule == "allow":
        return selected
    numbering: dict[ShardKey, int] = {}
    for ranges in selected:
        for key in ranges.shards:
            numbering.setdefault(key, len(numbering))
    lines = [ranges.line(numbering) for ranges in selected]
    if rule == "error":
        for i in range(len(lines)):
            for j in range(i + 1, len(lines)):
                if iv.overlaps(lines[i], lines[j]):
                    shared = iv.intersection_size(lines[i], lines[j])
                    raise ConfigError(
                        f"components {names[i]!r} and {names[j]!r} both match {shared:,} "
                        "documents; make their predicates disjoint or set `overlap: first` "
                        "(earlier components keep shared documents) or `overlap: allow`"
                    )
        return selected
    taken = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    settled = []
    for name, line in zip(names, lines, strict=True):
        mine = iv.difference(line, taken)
        if int((mine[1] - mine[0]).sum()) == 0:
            raise ConfigError(
                f"component {name!r}: every document it matches belongs to an earlier "
                "component (overlap: first); narrow the earlier predicates or drop it"
            )
        settled.append(DocumentRanges.from_line(*mine, numbering))
        taken = iv.union(taken, line)
    return settled


def _per_document(
    selected: list[DocumentRanges],
    shards: int,
    of_shard: Callable[[int], tuple[np.ndarray, np.ndarray]],
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per leaf, the lengths and offsets of its documents, from their shards' (`of_shard`,
    read once per shard for every leaf, then let go).

    One sort per leaf groups its ranges by shard: `DocumentRanges.gather` scans every range
    once per shard, a minute for 1,000 shards and 7e7 ranges (a scattered predicate).
    """
    lengths = [np.empty(ranges.documents, dtype=np.int64) for ranges in selected]
    starts = [np.empty(ranges.documents, dtype=np.int64) for ranges in selected]
    orders = [np.argsort(ranges.shard, kind="stable") for ranges in selected]
    cuts = [
        ranges.shard[order].searchsorted(np.arange(shards + 1))
        for ranges, order in zip(selected, orders, strict=True)
    ]
    for number in range(shards):
        whole = None
        for c, ranges in enumerate(selected):
            mine = orders[c][cuts[c][number] : cuts[c][number + 1]]
            if len(mine) == 0:
                continue
            whole = whole or of_shard(number)
            counts = ranges.end[mine] - ranges.start[mine]
            targets = iv.expand(ranges.bases[mine], counts)
            sources = iv.expand(ranges.start[mine], counts)
            lengths[c][targets] = whole[0][sources]
            starts[c][targets] = whole[1][sources]
    return lengths, starts


def _take(ahead: Iterator[tuple[int, T]], number: int) -> T:
    """The value for `number` from `in_order` (numbers asked for in increasing order)."""
    for found, value in ahead:
        if found == number:
            return value
    raise KeyError(number)


def _shared_shards(selected: list[DocumentRanges]):
    # The shards numbered in order of first use, as `DocumentRanges.join` would (without
    # concatenating every range only to read its list of shards).
    numbering: dict[ShardKey, int] = {}
    for ranges in selected:
        for key in ranges.shards:
            numbering.setdefault(key, len(numbering))
    shards = tuple(numbering)
    renumbered = []
    for ranges in selected:
        mapping = np.array([numbering[k] for k in ranges.shards] or [0], dtype=np.int32)
        # Same documents in the same order: the running counts carry over.
        renumbered.append(
            PresummedRanges(shards, mapping[ranges.shard], ranges.start, ranges.end, ranges.bases)
        )
    return shards, renumbered


def select_leaf(session, leaf, unit: str = "document"):
    """A component's selection; a component that selects nothing is an error naming it."""
    where = leaf.where or EVERYTHING
    try:
        selection = session.select(where, datasets=list(leaf.datasets or []) or None)
    except MixplaneError as error:
        raise ConfigError(f"component {leaf.name!r}: {error}") from None
    if selection.documents == 0:
        raise ConfigError(
            f"component {leaf.name!r}: no {unit} matches {where!r}"
            + (f" in {list(leaf.datasets)}" if leaf.datasets else "")
        )
    return selection


def _dataset_infos(session, refs: list[str], shards: tuple[ShardKey, ...]) -> list[dict[str, Any]]:
    """What the plan records of each dataset version it reads: its ref, folder, fingerprint
    and tokenizer, and for a remote one its registered manifest (`registered_manifest`)."""
    versions = session.resolve(refs)
    for kind, what in (("image_text", "image-text"), ("audio_text", "audio-text")):
        media = [version.ref for version in versions if version.kind == kind]
        if media:
            raise ConfigError(
                f"{', '.join(media)}: {what} data, which a text mixture cannot pack into "
                f"token sequences; give those components their own mixture with kind: {kind}"
            )
    used: dict[str, set[str]] = {}
    for uri, stem in shards:
        used.setdefault(uri, set()).add(stem)
    infos = []
    for version in versions:
        info = {
            "dataset": version.ref,
            "uri": version.uri,
            "fingerprint": version.fingerprint,
            "tokenizer": version.tokenizer or {},
        }
        if version.masks:  # fine-tuning data: its shards' loss masks are read too
            info["masked"] = True
        if version.added:  # `mixplane annotate`'s columns, for trace and explain to show
            info["added_columns"] = {column.name: column.folder for column in version.added}
        if not is_local(version.uri):
            manifest = session.registry.manifest(version.name, version.version)
            info["manifest"] = registered_manifest(manifest, used.get(version.uri, set()))
        infos.append(info)
    return infos


def registered_manifest(manifest: dict[str, Any], stems: set[str]) -> dict[str, Any]:
    """What a reader needs of a dataset's manifest as registered: its kind, format and
    tokenizer, and the files (sizes and hashes) of the shards `stems` a mixture reads.

    Example:
        >>> manifest = {"kind": "tokenize", "outputs": [{"path": "a.bin"}, {"path": "b.bin"}]}
        >>> registered_manifest(manifest, {"a"})["outputs"]
        [{'path': 'a.bin'}]
    """
    outputs = [
        entry
        for entry in manifest.get("outputs") or []
        if str(entry.get("path", "")).partition(".")[0] in stems
    ]
    return {key: manifest.get(key) for key in ("kind", "format", "tokenizer")} | {
        "outputs": outputs
    }


def _eos_plan(spec: MixtureSpec, infos, refs: dict[str, str]):
    """The EOS id, and per dataset folder whether an EOS is appended after each document."""
    by_ref = {info["dataset"]: info for info in infos}
    kinds = {i["tokenizer"].get("fingerprint") or i["tokenizer"].get("spec") for i in infos}
    if len(kinds) > 1:
        raise ConfigError(
            "the components draw from datasets tokenized with different tokenizers "
            f"({', '.join(i['dataset'] for i in infos)}); one mixture needs one tokenizer"
        )
    append = {}
    known = [
        i["tokenizer"].get("eos_id") for i in infos if i["tokenizer"].get("eos_id") is not None
    ]
    for uri, ref in refs.items():
        carries_eos = by_ref[ref]["tokenizer"].get("eos_id") is not None
        append[uri] = spec.append_eos and not carries_eos
    eos_id = spec.eos_id if spec.eos_id is not None else (known[0] if known else None)
    if any(append.values()) and eos_id is None:
        missing = sorted(ref for uri, ref in refs.items() if append[uri])
        raise ConfigError(
            f"datasets {missing} were tokenized without EOS and no eos_id is known: set "
            "`eos_id` in the mixture (or `append_eos: false` to pack documents back to back)"
        )
    return eos_id, append


def mixture_fingerprint(spec: MixtureSpec, infos: list[dict[str, Any]]) -> str:
    """The fingerprint of `spec` reading exactly the versions `infos` describe."""
    data = [(i["dataset"], i["fingerprint"]) for i in infos]
    content = orjson.dumps({"spec": spec.fingerprint(), "data": data})
    return hashlib.sha256(content).hexdigest()[:32]
