"""Opening an input for a forward-only read: a URL through fsspec, or `pipe:CMD`, the
standard output of a shell command (as WebDataset shard lists use it, e.g.
`pipe:curl -s https://host/shard-000.tar` or `pipe:aws s3 cp s3://b/x.tar -`).

Example:
    >>> with open_input("pipe:printf hello") as stream:
    ...     stream.read()
    b'hello'
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from mixplane.errors import InputError
from mixplane.io.urls import compressed, url_filesystem

PIPE = "pipe:"
# How much of a failed command's standard error its error message quotes.
STDERR_TAIL = 2000


def is_pipe(url: str) -> bool:
    """Whether `url` names a command's output rather than a file."""
    return url.startswith(PIPE)


@contextmanager
def open_input(url: str, storage_options: dict[str, Any] | None = None) -> Iterator[IO[bytes]]:
    """A binary stream of the input at `url`, decompressed by suffix (`.gz`, `.zst`).

    For `pipe:CMD` a command that exits with a non-zero status after its output was read to
    the end raises InputError naming the command and quoting its standard error; a command
    whose output is not read to the end (the reader stopped early) is ended quietly.
    """
    if not is_pipe(url):
        fs, path = url_filesystem(url, storage_options)
        # Over HTTP one streamed GET (block size 0) rather than a range request per block.
        block_size = 0 if url.startswith(("http://", "https://")) else 1 << 22
        with fs.open(path, "rb", block_size=block_size) as raw, compressed(raw, url) as stream:
            yield stream
        return
    command = url[len(PIPE) :]
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=errors)
        output = _Watched(process.stdout)
        try:
            with compressed(output, url) as stream:
                yield stream
        finally:
            if not output.ended:
                process.kill()
            process.stdout.close()
            status = process.wait()
        if output.ended and status != 0:
            errors.seek(0)
            said = errors.read()[-STDERR_TAIL:].decode("utf-8", "replace").strip()
            raise InputError(
                f"command {command!r} exited with status {status}" + (f": {said}" if said else "")
            )


class _Watched:
    """A command's output that remembers whether it was read to the end."""

    def __init__(self, raw: IO[bytes]):
        self.raw = raw
        self.ended = False

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        if not data and size != 0:
            self.ended = True
        return data

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        pass
