"""Which files the processes of this host have open or memory-mapped right now.

A loader memory-maps token files (`.bin`, `.mask`) and image shards and opens indexes and
metadata; the kernel lists them per process in `/proc/PID/maps` (mappings) and
`/proc/PID/fd` (open descriptors). This sees only this host, and only the processes this
user may inspect (all of them as root): loaders elsewhere are protected by the audit trail
(a run that has not stopped keeps what it reads). Objects on object storage are never
"open" here: a loader reads them through its local cache.

Example:
    >>> snapshot = open_files()
    >>> snapshot.holders(["/nowhere/shard-00000-000.bin"])
    []
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

PROC = "/proc"
_DELETED = " (deleted)"


@dataclass(frozen=True)
class OpenFiles:
    """Resolved paths open or mapped by some process, each with the processes holding it;
    `hidden`: processes whose files could not be read (another user's without root, or
    one the kernel protects even from root)."""

    paths: dict[str, frozenset[int]] = field(default_factory=dict)
    hidden: int = 0

    def holders(self, identities: list[str]) -> list[tuple[int, str]]:
        """`(pid, path)` for every process holding one of `identities` (resolved paths)."""
        return sorted((pid, path) for path in set(identities) for pid in self.paths.get(path, ()))


def open_files(proc: str = PROC) -> OpenFiles:
    """Every file open or mapped by a process of this host, as `/proc` shows them now."""
    held: dict[str, set[int]] = {}
    hidden = 0
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            paths = _mapped(os.path.join(proc, entry, "maps")) | _descriptors(
                os.path.join(proc, entry, "fd")
            )
        except PermissionError:
            hidden += 1
            continue
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended while being read
        for path in paths:
            held.setdefault(path, set()).add(pid)
    return OpenFiles({path: frozenset(pids) for path, pids in held.items()}, hidden)


def _mapped(maps: str) -> set[str]:
    """The files of `/proc/PID/maps` (address, perms, offset, device, inode, path); the
    kernel writes paths resolved, as `os.path.realpath` gives a version's files."""
    found = set()
    with open(maps, encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            parts = line.rstrip("\n").split(maxsplit=5)
            if len(parts) == 6 and parts[5].startswith("/"):
                found.add(parts[5].removesuffix(_DELETED))
    return found


def _descriptors(folder: str) -> set[str]:
    found = set()
    for name in os.listdir(folder):
        try:
            target = os.readlink(os.path.join(folder, name))
        except (FileNotFoundError, ProcessLookupError):
            continue  # closed meanwhile
        if target.startswith("/"):
            found.add(target.removesuffix(_DELETED))
    return found
