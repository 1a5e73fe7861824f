"""WebDataset tar shards (and img2dataset output): one Document per sample.

A sample is a run of consecutive members sharing a key: the member path up to the first dot
of its file name; the rest of the name, lowercased, is the member's extension. `KEY.txt` is
the caption, `KEY.json` adds metadata, image members (`jpg`, `png`, ...) and audio members
(`flac`, `wav`, `mp3`, `ogg`, `oga`, `opus`) become `media`.
Shards are read as a stream, so local files, s3://, http(s):// and `pipe:CMD` URLs (the
command's standard output) all work, gzip-compressed too (`.tar.gz`).

Example:
    >>> from mixplane.io.readers import ReadOptions, ReadStats, Shard
    >>> shard = Shard("data/00000.tar", "00000.tar", "webdataset")
    >>> docs = list(read(shard, ReadOptions(), ReadStats()))  # doctest: +SKIP
    >>> docs[0].id, sorted(docs[0].media)  # doctest: +SKIP
    ('00000.tar/000000000', ['jpg'])
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from mixplane.io.readers.base import (
    Quarantined,
    ReadOptions,
    ReadStats,
    Shard,
    default_source,
    oversized,
    sidecar_document,
)
from mixplane.io.readers.lines import PREFIX
from mixplane.io.readers.pipes import open_input
from mixplane.io.readers.tarstream import Broken, Member, TarReader
from mixplane.media import MEDIA_EXTENSIONS

# Members of other kinds up to this size that are UTF-8 text become metadata strings.
SMALL_TEXT = 4096
_KEY = re.compile(r"^((?:.*/|)[^./]+)\.([^/]*)$")


@dataclass(slots=True)
class _Sample:
    key: str
    offset: int
    members: dict[str, bytes] = field(default_factory=dict)
    problem: str | None = None
    raw: bytes = b""
    size: int = 0  # of the oversized member


def read(shard: Shard, options: ReadOptions, stats: ReadStats) -> Iterator:
    """Yield a Document per sample, named `NAME/KEY`; samples that cannot be read whole
    (repeated extension, oversized member, cut archive) are quarantined at `URL#KEY`."""
    source = default_source(shard, options)
    with open_input(shard.url, options.storage_options) as stream:
        reader = TarReader(stream, options.max_record_bytes)
        try:
            for sample in _samples(reader):
                yield _convert(sample, shard, options, source)
        finally:
            stats.bytes += reader.position


def split_name(name: str) -> tuple[str, str] | None:
    """`(key, extension)` of a member path as WebDataset splits it; None without a dot.

    Example:
        >>> split_name("shard/000.seg.PNG")
        ('shard/000', 'seg.png')
    """
    match = _KEY.match(name)
    if match is None:
        return None
    return match.group(1), match.group(2).lower()


def _samples(items: Iterator[Member | Broken]) -> Iterator[_Sample]:
    current: _Sample | None = None
    for item in items:
        if isinstance(item, Broken):
            yield from _broken(item, current)
            return
        parts = split_name(item.name)
        key, ext = parts if parts is not None else (item.name, "")
        if current is None or key != current.key:
            if current is not None:
                yield current
            current = _Sample(key, item.offset)
        if current.problem:
            continue  # already quarantined; its other members are skipped
        if parts is None:
            current.problem = (
                f"member {item.name!r} has no extension (WebDataset names are KEY.EXT)"
            )
            current.raw = bytes(item.data[:PREFIX])
        elif item.oversized:
            current.problem = "oversized"
            current.raw, current.size = bytes(item.data), item.size
        elif ext in current.members:
            current.problem = f"extension {ext!r} repeated under key {key!r} (member {item.name!r})"
            current.raw = bytes(item.data[:PREFIX])
        else:
            current.members[ext] = bytes(item.data)
    if current is not None:
        yield current


def _broken(item: Broken, current: _Sample | None) -> Iterator[_Sample]:
    """The sample the archive broke in, quarantined with the error. A sample completed just
    before the break is still whole only when the broken member is named and has another
    key: a break that names no member (a cut header, a compressed stream that failed between
    members) may have taken the rest of the current sample, so that sample takes the error."""
    parts = split_name(item.name) if item.name else None
    if current is not None and parts is not None and parts[0] != current.key:
        yield current
        current = None
    key = parts[0] if parts else (current.key if current else f"@{item.offset}")
    sample = current or _Sample(key, item.offset)
    sample.problem = sample.problem or item.error
    if sample.problem != item.error:
        sample.problem += f"; then {item.error}"
    sample.raw = item.partial or sample.raw
    yield sample


def _convert(sample: _Sample, shard: Shard, options: ReadOptions, source: str):
    doc_id = f"{shard.name}/{sample.key}"
    where = f"{shard.url}#{sample.key}"
    if sample.problem == "oversized":
        return oversized(where, sample.size, options.max_record_bytes, sample.raw, doc_id)
    if sample.problem:
        return Quarantined(where, sample.problem, sample.raw, doc_id, reason=_reason(sample))
    doc = sidecar_document(
        sample.members, options, source, doc_id, where, lambda ext: f"{sample.key}.{ext}"
    )
    if isinstance(doc, Quarantined):
        return doc
    doc.metadata["key"] = sample.key
    doc.media = {}
    for ext, data in sample.members.items():
        if ext in ("txt", "json"):
            continue
        small = (
            _small_text(data) if ext not in MEDIA_EXTENSIONS and ext not in doc.metadata else None
        )
        if small is not None:
            doc.metadata[ext] = small
        else:
            doc.media[ext] = data
    return doc


def _small_text(data: bytes) -> str | None:
    if len(data) > SMALL_TEXT:
        return None
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def _reason(sample: _Sample) -> str:
    problem = sample.problem or ""
    if "truncated" in problem:
        return "truncated tar"
    if "corrupt tar header" in problem or "corrupt pax header" in problem:
        return "corrupt tar header"
    if "repeated" in problem:
        return "repeated extension in sample"
    if "no extension" in problem:
        return "tar member without extension"
    if "unreadable stream" in problem:
        return "unreadable stream"
    return problem.split(":")[0][:60]
