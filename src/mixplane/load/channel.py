"""Messages from a training process to its DataLoader workers, through one small file.

Workers are separate processes holding their own copy of the dataset, and persistent
workers keep it across iterations, so the training process must tell them where to start
and which weight changes to apply. The training process rewrites one small JSON file
(atomically); a worker reads it when it starts an iteration and checks the file's stamp
before handing out each item (a stat call, about a microsecond). A second file, which
workers create and never write, tells the training process that workers read the stream
without a loader that follows what the training loop received.

Example:
    >>> channel = WorkerChannel()
    >>> channel.publish({"weight_changes": [{"step": 10, "weights": {"a": 1.0}}]})
    >>> channel.receive()
    {'weight_changes': [{'step': 10, 'weights': {'a': 1.0}}]}
    >>> channel.receive() is None  # nothing new since
    True
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
import weakref
from typing import Any

from mixplane.errors import ConfigError


def _remove(paths: tuple[str, ...], owner: int) -> None:
    if os.getpid() != owner:
        return
    for path in paths:
        if os.path.exists(path):
            os.remove(path)


class WorkerChannel:
    """A file that the creating process writes and the processes it starts read."""

    def __init__(self, folder: str | None = None):
        name = f"mixplane-loader-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self.path = os.path.join(folder or tempfile.gettempdir(), name + ".json")
        self.untracked_path = os.path.join(folder or tempfile.gettempdir(), name + ".untracked")
        self._seen: tuple[int, int, int] | None = None
        self._owner = os.getpid()
        weakref.finalize(self, _remove, (self.path, self.untracked_path), self._owner)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "untracked_path": self.untracked_path,
            "_seen": None,
            "_owner": self._owner,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def is_owner(self) -> bool:
        """True in the process that created the channel (the training process)."""
        return os.getpid() == self._owner

    def publish(self, message: dict[str, Any]) -> None:
        partial = f"{self.path}.{uuid.uuid4().hex[:8]}"
        with open(partial, "w") as handle:
            json.dump(message, handle)
        os.replace(partial, self.path)

    def latest(self) -> dict[str, Any] | None:
        """The last message published (None: none yet)."""
        self._seen = None
        return self.receive()

    def receive(self) -> dict[str, Any] | None:
        """The last message, if the file changed since the last call; else None."""
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return None
        stamp = (info.st_ino, info.st_mtime_ns, info.st_size)
        if stamp == self._seen:
            return None
        self._seen = stamp
        with open(self.path) as handle:
            return json.load(handle)

    def flag_untracked_workers(self) -> None:
        """Called by a worker that reads without a loader following the training loop."""
        with open(self.untracked_path, "a"):
            pass

    def untracked_workers(self) -> bool:
        return os.path.exists(self.untracked_path)

    def clear_untracked(self) -> None:
        if os.path.exists(self.untracked_path):
            os.remove(self.untracked_path)


def check_tracked(channel: WorkerChannel | None, builder: str) -> None:
    """Refuse to say where the loop is when DataLoader workers read the stream through a
    loader that does not follow it; `builder` names the call that builds one that does."""
    if channel is not None and channel.untracked_workers():
        raise ConfigError(
            "this dataset was read by DataLoader workers through a loader that does not "
            "follow what the training loop received, so its position here is stale; build "
            f"the loader with {builder}"
        )


def check_generation(generation: int, current: int) -> None:
    """Refuse a batch of a DataLoader pass begun before the last `load_state_dict`."""
    if generation != current:
        raise ConfigError(
            "a loader state was loaded while this loader was being iterated; start a new "
            "pass (iter(loader)) after load_state_dict"
        )


def check_pass(number: int, passes: int, generation: int, current: int) -> None:
    """Refuse to continue an iteration that a newer one or `load_state_dict` replaced."""
    if generation != current or number != passes:
        raise ConfigError(
            "this iteration was overtaken by load_state_dict or a newer iteration of the "
            "same dataset; start a new one (iter(dataset))"
        )
