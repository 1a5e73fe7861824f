"""Splitting inputs into tasks.

Tasks are defined by the input alone (a file, a byte range or a range of row groups), never
by the worker that runs them, so outputs do not depend on parallelism. Scanning the inputs
does I/O; `plan_tasks` is a pure function of what the scan found.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from mixplane.errors import InputError
from mixplane.io.readers import Shard, detect_format
from mixplane.io.readers.parquet import row_group_sizes
from mixplane.io.urls import compression_of, expand_inputs, url_filesystem
from mixplane.process.config import InputConfig


@dataclass(frozen=True, slots=True)
class InputFile:
    """One file found by expanding an input pattern."""

    url: str
    name: str
    format: str
    size: int
    input_index: int
    row_groups: tuple[int, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class Task:
    """A unit of work: one shard of one input file. Its index names its outputs."""

    index: int
    input_index: int
    shard: Shard
    size: int


def scan_inputs(inputs: list[InputConfig], storage_options: dict) -> list[InputFile]:
    """Expand every input pattern and read what planning needs (sizes, row groups)."""
    expanded = []
    for index, spec in enumerate(inputs):
        for url, root in expand_inputs(_hf_patterns(spec, storage_options), storage_options):
            fmt = _format_of(url, spec)
            if fmt is not None:
                expanded.append((index, url, root, fmt))
    if not expanded:
        raise InputError("the inputs contain no readable file")
    common = _common_root([root for _, _, root, _ in expanded])
    files = []
    for index, url, _, fmt in expanded:
        fs, path = url_filesystem(url, storage_options)
        size = fs.size(path)
        groups = tuple(row_group_sizes(url, storage_options)) if fmt == "parquet" else ()
        files.append(InputFile(url, _relative(url, common), fmt, size, index, groups))
    return files


def _hf_patterns(spec: InputConfig, storage_options: dict) -> list[str]:
    """A saved Hugging Face dataset is a folder; read its Arrow files, not its JSON."""
    patterns = []
    for pattern in spec.patterns():
        fs, path = url_filesystem(pattern, storage_options)
        is_dataset = spec.format == "hf_disk" or (
            spec.format == "auto"
            and fs.isdir(path)
            and any(fs.exists(f"{path}/{n}") for n in ("state.json", "dataset_dict.json"))
        )
        patterns.append(pattern.rstrip("/") + "/**/*.arrow" if is_dataset else pattern)
    return patterns


def _format_of(url: str, spec: InputConfig) -> str | None:
    if spec.format != "auto":
        return spec.format
    fmt = detect_format(url)
    if fmt is None:
        raise InputError(f"{url}: cannot tell the format from the name; set 'format' on the input")
    return fmt


def _common_root(roots: list[str]) -> str:
    split = [root.rstrip("/").split("/") for root in roots]
    common = split[0]
    for parts in split[1:]:
        size = 0
        while size < min(len(common), len(parts)) and common[size] == parts[size]:
            size += 1
        common = common[:size]
    return "/".join(common)


def _relative(url: str, root: str) -> str:
    if root and url.startswith(root.rstrip("/") + "/"):
        return url[len(root.rstrip("/")) + 1 :]
    return posixpath.basename(url)


def plan_tasks(files: list[InputFile], task_bytes: int) -> list[Task]:
    """Cut files into tasks of about `task_bytes`: uncompressed JSON Lines by byte range,
    Parquet by row groups, everything else whole.

    Example:
        >>> f = InputFile("a.jsonl", "a.jsonl", "jsonl", 250, 0)
        >>> [(t.shard.start, t.shard.end) for t in plan_tasks([f], 100)]
        [(0, 100), (100, 200), (200, 250)]
    """
    tasks: list[Task] = []
    for file in sorted(files, key=lambda f: (f.input_index, f.url)):
        for start, end, size in _pieces(file, task_bytes):
            shard = Shard(file.url, file.name, file.format, start, end)
            tasks.append(Task(len(tasks), file.input_index, shard, size))
    return tasks


def _pieces(file: InputFile, task_bytes: int) -> list[tuple[int, int | None, int]]:
    if file.format == "jsonl" and compression_of(file.url) is None and file.size > task_bytes:
        return [
            (start, min(start + task_bytes, file.size), min(task_bytes, file.size - start))
            for start in range(0, file.size, task_bytes)
        ]
    if file.format == "parquet" and len(file.row_groups) > 1 and file.size > task_bytes:
        pieces, start, size = [], 0, 0
        for group, group_size in enumerate(file.row_groups):
            if size and size + group_size > task_bytes:
                pieces.append((start, group, size))
                start, size = group, 0
            size += group_size
        pieces.append((start, len(file.row_groups), size))
        return pieces
    return [(0, None, file.size)]
