"""Writers for the four raw layouts, byte-for-byte reproducible.

Tar members have plain ustar headers (mode 0o644, mtime 0, uid/gid 0, no user names), JSON
is written with sorted keys, and the img2dataset statistics carry fixed times, so nothing
depends on the clock or the machine's users.
"""

from __future__ import annotations

import io
import tarfile
from contextlib import ExitStack
from typing import Any, BinaryIO

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.io.atomic import atomic_open, join_url, write_bytes
from mixplane.io.urls import url_filesystem

SAMPLES_PER_SHARD = 500
IMG2DATASET_PER_SHARD = 10_000
I2D_COLUMNS = (
    ("key", pa.string()),
    ("status", pa.string()),
    ("error_message", pa.string()),
    ("width", pa.int64()),
    ("height", pa.int64()),
    ("original_width", pa.int64()),
    ("original_height", pa.int64()),
    ("sha256", pa.string()),
    ("url", pa.string()),
    ("caption", pa.string()),
    ("sample_id", pa.string()),
)
I2D_SCHEMA = pa.schema(list(I2D_COLUMNS))
FIXED_TIME = 1_700_000_000.0


class LooseFiles:
    """Many small files under one folder (image folders, served URLs): written directly,
    without a temporary name and fsync each, which would dominate the generation time;
    `generate_image_corpus` removes `raw/` first, so a crash leaves no half-kept state."""

    def __init__(self, folder_url: str):
        self.fs, self.root = url_filesystem(folder_url)
        self.made: set[str] = set()
        self.names: list[str] = []

    def write(self, name: str, data: bytes) -> None:
        path = f"{self.root.rstrip('/')}/{name}"
        parent = path.rsplit("/", 1)[0]
        if parent not in self.made:
            self.fs.makedirs(parent, exist_ok=True)
            self.made.add(parent)
        self.fs.pipe_file(path, data)
        self.names.append(name)


def json_bytes(value: dict[str, Any]) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class TarSink:
    """A tar written member by member, with fixed headers."""

    def __init__(self, handle: BinaryIO):
        # Closed by `close`: members are added one by one as samples arrive.
        self._tar = tarfile.open(fileobj=handle, mode="w", format=tarfile.USTAR_FORMAT)  # noqa: SIM115

    def add(self, name: str, data: bytes) -> int:
        """Append one member; returns the offset of its data in the tar."""
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = len(data), 0, 0o644
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        start = self._tar.offset
        self._tar.addfile(info, io.BytesIO(data))
        # A ustar member is one 512-byte header then its data.
        return start + tarfile.BLOCKSIZE

    def close(self) -> None:
        self._tar.close()


def sample_members(key: str, image: tuple[str, bytes] | None, caption: str | None, meta: dict):
    """The members of one WebDataset sample: the image, its JSON, then its caption."""
    members = []
    if image is not None:
        members.append((f"{key}.{image[0]}", image[1]))
    members.append((f"{key}.json", json_bytes(meta)))
    if caption is not None:
        members.append((f"{key}.txt", caption.encode("utf-8")))
    return members


class ShardedTars:
    """WebDataset shards of `per_shard` samples named by `pattern` (with `{index}`)."""

    def __init__(self, out: str, pattern: str, per_shard: int):
        self.out, self.pattern, self.per_shard = out, pattern, per_shard
        self.names: list[str] = []
        self.members = 0
        self._stack: ExitStack | None = None
        self._tar: TarSink | None = None
        self._in_shard = 0

    def next_slot(self) -> tuple[str, int]:
        """`(file name, index within it)` where the next sample goes."""
        if self._tar is None or self._in_shard == self.per_shard:
            self._roll()
        return self.names[-1], self._in_shard

    def write(self, members: list[tuple[str, bytes]]) -> None:
        self.next_slot()
        assert self._tar is not None
        for name, data in members:
            self._tar.add(name, data)
        self.members += len(members)
        self._in_shard += 1

    def _roll(self) -> None:
        self.close()
        name = self.pattern.format(index=len(self.names))
        self.names.append(name)
        self._stack = ExitStack()
        self._tar = TarSink(self._stack.enter_context(atomic_open(join_url(self.out, name))))
        self._in_shard = 0

    def close(self) -> None:
        if self._tar is not None and self._stack is not None:
            self._tar.close()
            self._stack.close()
            self._tar, self._stack = None, None


def truncated_tar(samples: list[list[tuple[str, bytes]]], cut_sample: int) -> bytes:
    """A tar of `samples` cut in the middle of the first member of sample `cut_sample`."""
    buffer = io.BytesIO()
    tar = TarSink(buffer)
    cut = 0
    for index, members in enumerate(samples):
        for position, (name, data) in enumerate(members):
            offset = tar.add(name, data)
            if index == cut_sample and position == 0:
                cut = offset + len(data) // 2
    tar.close()
    return buffer.getvalue()[:cut]


def write_img2dataset_shard(
    out: str, folder: str, index: int, samples: list[dict[str, Any]]
) -> list[str]:
    """`NNNNN.tar` (successful samples only), `NNNNN.parquet` (every row) and
    `NNNNN_stats.json`, as img2dataset writes them; returns the three names."""
    stem = f"{folder}/{index:05d}"
    with atomic_open(join_url(out, f"{stem}.tar")) as handle:
        tar = TarSink(handle)
        for sample in samples:
            if sample["row"]["status"] == "success":
                for name, data in sample["members"]:
                    tar.add(name, data)
        tar.close()
    rows = [sample["row"] for sample in samples]
    table = pa.table({name: [row[name] for row in rows] for name, _ in I2D_COLUMNS}, I2D_SCHEMA)
    with atomic_open(join_url(out, f"{stem}.parquet")) as handle:
        pq.write_table(table, handle, compression="zstd")
    statuses: dict[str, int] = {}
    errors: dict[str, int] = {}
    for row in rows:
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
        if row["error_message"]:
            errors[row["error_message"]] = errors.get(row["error_message"], 0) + 1
    stats = {
        "count": len(rows),
        "successes": statuses.get("success", 0),
        "failed_to_download": statuses.get("failed_to_download", 0),
        "failed_to_resize": statuses.get("failed_to_resize", 0),
        "duration": 1.0,
        "start_time": FIXED_TIME,
        "end_time": FIXED_TIME + 1.0,
        "status_dict": {"count": len(rows), "most_common": sorted(errors.items())},
    }
    write_bytes(join_url(out, f"{stem}_stats.json"), json_bytes(stats) + b"\n")
    return [f"{stem}.tar", f"{stem}.parquet", f"{stem}_stats.json"]
