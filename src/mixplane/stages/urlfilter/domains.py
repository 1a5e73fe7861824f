"""A set of normalized domains held as the sorted 64-bit hashes of their names.

Block lists run to millions of domains (FineWeb's holds 4.6 million). As Python strings in a
set they cost every worker about 140 bytes and a microsecond of loading each; as sorted
xxh3_64 hashes of their UTF-8 names they cost 8 bytes, are built from the file's bytes
without a Python object per entry, and a lookup is a binary search. Two different names
share a hash with probability 2^-64: with 5 million listed domains, a lookup of an unlisted
one matches by accident about once in 4 x 10^12 lookups.

Nearly every entry of a large list is already in normal form. Those that may not be (a
character other than lowercase ASCII letters, digits, `.`, `-` and `_`; a leading `www.`; a
trailing dot; comments and blanks) are found by scanning the whole text at once, cut out,
and normalized one by one (`normal.normal_host`); the rest are hashed as they are.

A list file's set is built once per machine and kept in the machine's cache
(`lists/domains-vV-HASH.npy` under `$MIXPLANE_CACHE`, else `~/.cache/mixplane`), named by the
hash of the file's bytes: every later worker and run maps it instead of building it (one
process builds while the others wait; a read-only cache only means each builds its own).

Example:
    >>> domains = DomainSet.from_text(b"example.com\\nWWW.Ads.Example.ORG  # tracker\\n")
    >>> "example.com" in domains, "ads.example.org" in domains, "example.org" in domains
    (True, True, False)
    >>> len(domains)
    2
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np
import xxhash

from mixplane.io.atomic import atomic_open
from mixplane.io.locks import locked
from mixplane.io.machine_cache import cache_root
from mixplane.stages.urlfilter.lists import decoded, parse_entries, read_stored
from mixplane.stages.urlfilter.normal import normal_host, split_url

# A character that normalizing a host may change or remove (newlines frame the entries);
# a leading `www.` and a trailing dot are found apart, by plain search (one pattern for all
# three is several times slower).
_UNUSUAL_CHAR = re.compile(rb"[^a-z0-9._\n-]")
_UNUSUAL_TEXT = ((b"\nwww.", 1), (b".\n", 0))  # and where in it the entry's text is
CACHE_VERSION = 1  # of how entries become hashes: a change must name its cached sets anew
_EMPTY = xxhash.xxh3_64_intdigest(b"")


class DomainSet:
    """Normalized domain names, as sorted unique xxh3_64 hashes (see the module doc)."""

    def __init__(self, hashes: np.ndarray):
        self.hashes = hashes

    @classmethod
    def from_text(cls, *texts: bytes) -> DomainSet:
        """The domains of list texts (one entry a line, `#` comments); an entry written as
        a URL counts for its host."""
        return cls.union([_hashes(text) for text in texts])

    @classmethod
    def from_files(
        cls, paths: list[str], inline: list[str], storage_options: dict[str, Any] | None = None
    ) -> DomainSet:
        """The domains of list files (each built once per machine, see the module doc) and
        of `inline` entries."""
        parts = [cached_hashes(path, storage_options) for path in paths]
        if inline:
            parts.append(_hashes("\n".join(inline).encode("utf-8")))
        return cls.union(parts)

    @classmethod
    def union(cls, parts: list[np.ndarray]) -> DomainSet:
        """The set of several sorted or unsorted hash arrays (one sorted one is kept as is)."""
        if len(parts) == 1 and _is_set(parts[0]):
            return cls(parts[0])
        hashes = np.concatenate([np.empty(0, np.uint64), *parts])
        hashes.sort()  # then drop repeats (np.unique hashes first: several times slower)
        first = np.ones(len(hashes), dtype=bool)
        first[1:] = hashes[1:] != hashes[:-1]
        return cls(hashes[first])

    def __contains__(self, domain: object) -> bool:
        if not isinstance(domain, str):
            return False
        key = np.uint64(xxhash.xxh3_64_intdigest(domain.encode("utf-8")))
        at = int(np.searchsorted(self.hashes, key))
        return at < len(self.hashes) and self.hashes[at] == key

    def __len__(self) -> int:
        return len(self.hashes)

    def __repr__(self) -> str:
        return f"DomainSet({len(self)} domains)"


def _hashes(text: bytes) -> np.ndarray:
    """The hashes of one list's normalized domains."""
    framed = b"\n" + text + b"\n"
    odd: dict[int, int] = {}  # start -> end of each line normalization may change

    def note(at: int) -> None:
        odd.setdefault(framed.rfind(b"\n", 0, at) + 1, framed.find(b"\n", at))

    for match in _UNUSUAL_CHAR.finditer(framed):
        note(match.start())
    for marker, offset in _UNUSUAL_TEXT:
        at = framed.find(marker)
        while at >= 0:
            note(at + offset)
            at = framed.find(marker, at + 1)
    pieces, position = [], 0
    for start in sorted(odd):  # the text with the odd lines cut out
        pieces.append(framed[position:start])
        position = odd[start] + 1
    pieces.append(framed[position:])
    plain = b"".join(pieces).split(b"\n")
    hashes = np.fromiter(map(xxhash.xxh3_64_intdigest, plain), np.uint64, len(plain))
    hashes = hashes[hashes != np.uint64(_EMPTY)]
    lines = "\n".join(framed[start:end].decode("utf-8") for start, end in odd.items())
    entries = parse_entries(lines)
    hosts = {split_url(entry)[0] if "/" in entry else normal_host(entry) for entry in entries}
    found = [xxhash.xxh3_64_intdigest(host.encode("utf-8")) for host in hosts if host]
    return np.concatenate([hashes, np.asarray(found, dtype=np.uint64)])


def cached_hashes(path: str, storage_options: dict[str, Any] | None = None) -> np.ndarray:
    """The sorted hashes of one list file's domains, from the machine's cache (built there
    on first use); a cache that cannot be written only costs a build."""
    stored = read_stored(path, storage_options)
    name = f"domains-v{CACHE_VERSION}-{xxhash.xxh3_128_hexdigest(stored)}.npy"
    target = os.path.join(cache_root(None), "lists", name)
    found = _load(target)
    if found is not None:
        return found
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with locked(target + ".lock"):  # one process builds; the others wait, then map it
            found = _load(target)
            if found is not None:
                return found
            hashes = DomainSet.from_text(decoded(stored, path)).hashes
            with atomic_open(target) as handle:
                np.save(handle, hashes)
            return hashes
    except OSError:  # a cache folder this process cannot write
        return DomainSet.from_text(decoded(stored, path)).hashes


def _load(target: str) -> np.ndarray | None:
    """A cached set, mapped; None when it is missing or damaged (then it is built again)."""
    try:
        return np.load(target, mmap_mode="r")
    except (OSError, ValueError, EOFError):
        return None


def _is_set(hashes: np.ndarray) -> bool:
    return bool(np.all(hashes[1:] > hashes[:-1]))
