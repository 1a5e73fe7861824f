"""Readers turn one shard of an input file into Documents (or quarantined records).

Each format has a module with a `read(shard, options)` generator. `FORMATS` maps format
names to readers; `detect_format` picks one from a file name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from mixplane.errors import InputError
from mixplane.io.readers import arrow, imagefolder, jsonl, parquet, textfile, warc, webdataset
from mixplane.io.readers.base import Quarantined, ReadOptions, ReadStats, Shard
from mixplane.io.urls import strip_compression

Reader = Callable[[Shard, ReadOptions, ReadStats], Iterator]

FORMATS: dict[str, Reader] = {
    "jsonl": jsonl.read,
    "parquet": parquet.read,
    "text": textfile.read,
    "html": textfile.read,
    "warc": warc.read,
    "hf_disk": arrow.read,
    "webdataset": webdataset.read,
    "image_folder": imagefolder.read,
    "audio_folder": imagefolder.read,
}

_SUFFIXES = {
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".txt": "text",
    ".md": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".warc": "warc",
    ".wet": "warc",  # Common Crawl's text files: WARC conversion records
    ".wat": "wat",  # Common Crawl's metadata files: refused, see readers.warc
    ".arrow": "hf_disk",
    ".tar": "webdataset",
}


def detect_format(url: str) -> str | None:
    """The format implied by a file name, ignoring a compression suffix; None if unknown."""
    name = strip_compression(url).lower()
    for suffix, fmt in _SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    return None


def reader_for(fmt: str) -> Reader:
    try:
        return FORMATS[fmt]
    except KeyError:
        valid = ", ".join(sorted(FORMATS))
        raise InputError(f"unknown input format {fmt!r}; valid formats: {valid}") from None


__all__ = [
    "FORMATS",
    "Quarantined",
    "ReadOptions",
    "ReadStats",
    "Shard",
    "detect_format",
    "reader_for",
]
