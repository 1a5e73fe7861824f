"""File locks (flock) that processes of one machine coordinate through: the kernel drops a
lock when its holder dies, so a crash leaves nothing stale.

Example:
    >>> with locked("/tmp/cache/.lock"):  # doctest: +SKIP
    ...     pass  # one process of the machine at a time
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator


@contextlib.contextmanager
def locked(path: str, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive lock on file `path` (made if missing); yields False when `wait` is
    off and another process holds it."""
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        yield try_lock(handle, fcntl.LOCK_EX) or (wait and _block(handle, fcntl.LOCK_EX))
    finally:
        os.close(handle)  # closing releases the lock


def try_lock(fd: int, kind: int) -> bool:
    """Take lock `kind` (LOCK_SH or LOCK_EX) on an open file without waiting."""
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _block(fd: int, kind: int) -> bool:
    fcntl.flock(fd, kind)
    return True
