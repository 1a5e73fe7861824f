"""File locks between processes: a forked child (a DataLoader worker) never keeps a lock
that a thread of its parent held at the fork."""

from __future__ import annotations

import os
import signal
import threading
import time

from mixplane.io.locks import locked


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
