"""File locks between processes: a forked child (a DataLoader worker) never keeps a lock
that a thread of its parent held at the fork."""

from __future__ import annotations

import fcntl
import os
import signal
import threading
import time

from mixplane.io.locks import close_lock, locked, open_lock


def test_a_lock_held_at_a_fork_is_not_held_by_the_child(tmp_path):
    path = str(tmp_path / ".lock")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with locked(path):
            held.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    ready, signal_ready = os.pipe()
    child = os.fork()
    if child == 0:  # a worker that lives on, never touching the lock
        os.write(signal_ready, b"1")  # its fork handlers have run
        time.sleep(30)
        os._exit(0)
    os.read(ready, 1)
    try:
        with locked(path, wait=False) as got:
            assert not got  # the parent's thread still holds it
        release.set()
        holder.join()
        with locked(path, wait=False) as got:
            assert got, "the forked child kept the lock its parent's thread had let go"
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        os.close(ready)
        os.close(signal_ready)


def test_letting_go_unlocks_even_when_a_copy_of_the_descriptor_lives_on(tmp_path):
    """A child forked at an unlucky moment (between a thread's open and its listing) keeps a
    copy of the descriptor it cannot know to close; the parent letting go must unlock anyway,
    or the lock lives as long as the child (a DataLoader worker: the whole epoch)."""
    path = str(tmp_path / ".lock")
    fd = open_lock(path)
    fcntl.flock(fd, fcntl.LOCK_EX)
    copy = os.dup(fd)  # the same open file description, as a forked child would hold it
    try:
        close_lock(fd)
        with locked(path, wait=False) as got:
            assert got, "the lock outlived its holder's close_lock"
    finally:
        os.close(copy)
