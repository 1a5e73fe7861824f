"""File locks (flock) that processes of one machine coordinate through: the kernel drops a
lock when its holder dies, so a crash leaves nothing stale.

A lock belongs to an open file description, which a forked child shares: a DataLoader worker
forked while a thread of its parent held a lock would hold it too, for as long as it lives,
though no thread of its own ever took it. So every lock file is opened with `open_lock` and
let go with `close_lock`, which unlocks before it closes (closing alone releases nothing
while a child still has a copy), and a forked child closes its copies of all of them at once.
A fork waits for any open or close under way, so no descriptor escapes the list.

Example:
    >>> with locked("/tmp/cache/.lock"):  # doctest: +SKIP
    ...     pass  # one process of the machine at a time
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator

_open: set[int] = set()  # lock files this process has open (held or about to be)
_guard = threading.Lock()


def open_lock(path: str) -> int:
    """Open lock file `path` (made if missing); lock it with `try_lock` or `fcntl.flock`."""
    with _guard:  # opened and listed at once: a fork in between would miss this descriptor
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        _open.add(fd)
    return fd


def close_lock(fd: int) -> None:
    """Unlock and close a lock file from `open_lock` (unless this is a forked child, which
    has closed its copies of its parent's already)."""
    with _guard:
        if fd not in _open:
            return
        _open.discard(fd)
        # Explicitly: a child holding a copy of the descriptor would keep the lock alive.
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _before_fork() -> None:
    _guard.acquire()


def _after_fork_in_parent() -> None:
    _guard.release()


def _close_all_in_child() -> None:
    global _guard
    _guard = threading.Lock()  # the copy is held (by `_before_fork`)
    for fd in _open:
        with contextlib.suppress(OSError):
            os.close(fd)  # closed, not unlocked: unlocking would release the parent's lock
    _open.clear()


os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_close_all_in_child
)


@contextlib.contextmanager
def locked(path: str, wait: bool = True) -> Iterator[bool]:
    """Hold an exclusive lock on file `path` (made if missing); yields False when `wait` is
    off and another process holds it."""
    handle = open_lock(path)
    try:
        yield try_lock(handle, fcntl.LOCK_EX) or (wait and _block(handle, fcntl.LOCK_EX))
    finally:
        close_lock(handle)


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
