"""Splitting inputs into tasks.

Tasks are defined by the input alone (a file, a byte range or a range of row groups), never
by the worker that runs them, so outputs do not depend on parallelism. Scanning the inputs
does I/O; `plan_tasks` is a pure function of what the scan found.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from mixplane.errors import InputError
from mixplane.io.pathlists import read_path_list
from mixplane.io.readers import Shard, detect_format, parquet
from mixplane.io.readers.imagefolder import MEDIA_FOLDERS, folder_media
from mixplane.io.readers.parquet import row_group_sizes
from mixplane.io.readers.pipes import is_pipe
from mixplane.io.readers.warc import wat_refused
from mixplane.io.urls import (
    compression_of,
    expand_braces,
    expand_inputs,
    is_http,
    url_filesystem,
)
from mixplane.process.config import InputConfig


@dataclass(frozen=True, slots=True)
class InputFile:
    """One file found by expanding an input pattern (for `image_folder` or `audio_folder`, one
    folder).

    `row_groups` holds the byte sizes of the pieces a task may take a range of: Parquet row
    groups, or the images of an image folder. `unreadable` says why a file cannot be read
    at all (a `.parquet` file that is empty, truncated or not Parquet); processing
    quarantines such a file as one record. `listed`: the file came from a `paths` list; it
    is read whole, as one task, and its size (0) is not looked up, so that planning a list
    of a hundred thousand remote files costs one request, not one per file.
    """

    url: str
    name: str
    format: str
    size: int
    input_index: int
    row_groups: tuple[int, ...] = field(default=())
    unreadable: str = ""
    listed: bool = False


@dataclass(frozen=True, slots=True)
class Task:
    """A unit of work: a shard of one input file, or several small files of one input read
    in turn. Its index names its outputs."""

    index: int
    input_index: int
    shards: tuple[Shard, ...]
    size: int

    @property
    def shard(self) -> Shard:
        """The task's one shard (a task of several files has no single one)."""
        if len(self.shards) != 1:
            raise ValueError(f"task {self.index} reads {len(self.shards)} files; see shards")
        return self.shards[0]


# Small files are grouped into tasks of at most this many files and bytes (or task_size_mb,
# when smaller): enough work per task that its fixed costs (a part file and a marker each,
# a request per file on object storage) stay small, and still many tasks for the workers.
GROUP_FILES = 256
GROUP_BYTES = 64 << 20
# Formats whose small files are grouped. A WebDataset tar is a shard already (its output
# image shard keeps its place), and an image folder is split by its own images.
GROUPED_FORMATS = frozenset({"jsonl", "parquet", "text", "html", "warc", "hf_disk"})


def scan_inputs(inputs: list[InputConfig], storage_options: dict) -> list[InputFile]:
    """Expand every input pattern and read what planning needs (sizes, row groups)."""
    expanded = []
    for index, spec in enumerate(inputs):
        for url, root in _expand(spec, storage_options):
            fmt = _format_of(url, spec)
            if fmt is not None:
                expanded.append((index, url, root, fmt))
    if not expanded:
        raise InputError("the inputs contain no readable file")
    common = _common_root([root for _, _, root, _ in expanded])
    files = []
    for index, url, _, fmt in expanded:
        name = _relative(url, common)
        if is_pipe(url):
            files.append(InputFile(url, name, fmt, 0, index))  # a command's output size is unknown
        elif inputs[index].paths is not None:
            files.append(InputFile(url, name, fmt, 0, index, listed=True))
        elif fmt in MEDIA_FOLDERS:
            sizes = tuple(size for _, size in folder_media(url, fmt, storage_options))
            if not sizes:
                what = "image" if fmt == "image_folder" else "audio"
                raise InputError(f"{fmt} {url!r} holds no {what} file")
            name = "" if url.rstrip("/") == common.rstrip("/") else name
            files.append(InputFile(url, name, fmt, sum(sizes), index, sizes))
        else:
            fs, path = url_filesystem(url, storage_options)
            size = fs.size(path)
            groups, problem = _row_groups(url, storage_options) if fmt == "parquet" else ((), "")
            files.append(InputFile(url, name, fmt, size, index, groups, problem))
    return files


def _row_groups(url: str, storage_options: dict) -> tuple[tuple[int, ...], str]:
    """A Parquet file's row group sizes, or why it cannot be opened (then it is one task)."""
    try:
        return tuple(row_group_sizes(url, storage_options)), ""
    except Exception as error:
        if parquet.unreadable(error):
            return (), f"{parquet.UNREADABLE_FILE}: {parquet.one_line(error)}"
        if is_http(url) and "range requests" in str(error):  # fsspec's words for it
            raise InputError(
                f"{url}: the server does not answer range requests, which reading Parquet "
                "needs (its footer is at the end); download the file first, or serve it "
                "from a server that does"
            ) from None
        raise


def _expand(spec: InputConfig, storage_options: dict) -> list[tuple[str, str]]:
    """`(url, root)` of each file (or image folder, or command) an input names."""
    if spec.format in MEDIA_FOLDERS:
        return _media_folders(spec, storage_options)
    if spec.paths is not None:
        return _listed(spec, storage_options)
    patterns = spec.patterns()
    found = [(url, "") for p in patterns if is_pipe(p) for url in expand_braces(p)]
    files = [pattern for pattern in patterns if not is_pipe(pattern)]
    if files:
        files = _hf_patterns(files, spec.format, storage_options)
        found += _without_tar_sidecars(expand_inputs(files, storage_options))
    return found


def _listed(spec: InputConfig, storage_options: dict) -> list[tuple[str, str]]:
    """`(url, root)` of each file a `paths` list names: the root is the base
    (names stay the listed relative paths) or, for an absolute entry, its folder."""
    base = spec.base.rstrip("/") if spec.base else None
    urls = read_path_list(str(spec.paths), spec.base, storage_options)
    inside = f"{base}/" if base else None
    return [
        (url, base if inside and url.startswith(inside) else posixpath.dirname(url)) for url in urls
    ]


def _without_tar_sidecars(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """img2dataset writes `00000.parquet` and `00000_stats.json` beside `00000.tar` (the
    same samples' metadata and the shard's statistics): the tar is the input, not those."""
    tars = {url[: -len(".tar")] for url, _ in found if url.endswith(".tar")}
    tars |= {url[: -len(".tar.gz")] for url, _ in found if url.endswith(".tar.gz")}
    if not tars:
        return found

    def sidecar(url: str) -> bool:
        return any(url.endswith(s) and url[: -len(s)] in tars for s in (".parquet", "_stats.json"))

    return [(url, root) for url, root in found if not sidecar(url)]


def _media_folders(spec: InputConfig, storage_options: dict) -> list[tuple[str, str]]:
    """Each folder an `image_folder` or `audio_folder` input names, as `(folder, folder)`."""
    found = []
    for pattern in spec.patterns():
        for expanded in expand_braces(pattern):
            fs, path = url_filesystem(expanded, storage_options)
            if any(c in path for c in "*?["):
                folders = sorted(p for p in fs.glob(path) if fs.isdir(p))
            else:
                folders = [path] if fs.isdir(path) else []
            if not folders:
                raise InputError(f"{spec.format} input {expanded!r} matches no folder")
            for folder in folders:
                url = folder if "://" not in expanded else fs.unstrip_protocol(folder)
                found.append((url.rstrip("/"), url.rstrip("/")))
    return sorted(set(found))


def _hf_patterns(patterns: list[str], fmt: str, storage_options: dict) -> list[str]:
    """A saved Hugging Face dataset is a folder; read its Arrow files, not its JSON."""
    found = []
    for pattern in patterns:
        fs, path = url_filesystem(pattern, storage_options)
        is_dataset = fmt == "hf_disk" or (
            fmt == "auto"
            and fs.isdir(path)
            and any(fs.exists(f"{path}/{n}") for n in ("state.json", "dataset_dict.json"))
        )
        found.append(pattern.rstrip("/") + "/**/*.arrow" if is_dataset else pattern)
    return found


def _format_of(url: str, spec: InputConfig) -> str | None:
    fmt = spec.format if spec.format != "auto" else detect_format(url)
    if fmt == "wat":
        raise wat_refused(url)
    if spec.format != "auto":
        return fmt
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
    """Cut files into tasks of about `task_bytes`: uncompressed JSON Lines by byte range
    (except over HTTP(S), read by one streamed GET), Parquet by row groups, image folders
    by runs of images, everything else whole (a tar shard is one task: its samples can only
    be found by reading it from the start). Small document files of one input (JSON Lines,
    Parquet, text, HTML, WARC, saved datasets) follow each other, in order, in tasks of up
    to `GROUP_FILES` files and `GROUP_BYTES` (or `task_bytes`, if smaller); a command's
    output (`pipe:`), of unknown size, is alone.

    Example:
        >>> f = InputFile("a.jsonl", "a.jsonl", "jsonl", 250, 0)
        >>> [(t.shard.start, t.shard.end) for t in plan_tasks([f], 100)]
        [(0, 100), (100, 200), (200, 250)]
        >>> small = [InputFile(f"{n}.jsonl", f"{n}.jsonl", "jsonl", 40, 0) for n in "abc"]
        >>> [[s.url for s in t.shards] for t in plan_tasks(small, 100)]
        [['a.jsonl', 'b.jsonl'], ['c.jsonl']]
    """
    group_bytes = min(task_bytes, GROUP_BYTES)
    planned: list[_Planned] = []
    for file in sorted(files, key=lambda f: (f.input_index, f.url)):
        cuts = _pieces(file, task_bytes)
        small = (
            file.format in GROUPED_FORMATS
            and len(cuts) == 1
            and file.size <= group_bytes
            and not is_pipe(file.url)
            and not file.listed
        )
        shards = [Shard(file.url, file.name, file.format, start, end) for start, end, _ in cuts]
        if small and planned and planned[-1].takes(file, group_bytes):
            planned[-1].shards.append(shards[0])
            planned[-1].size += file.size
            continue
        for shard, (_, _, size) in zip(shards, cuts, strict=True):
            planned.append(_Planned(file.input_index, [shard], size, groups=small))
    return [Task(index, p.input_index, tuple(p.shards), p.size) for index, p in enumerate(planned)]


@dataclass
class _Planned:
    """A task being planned; `groups`: it holds small files, and more may join."""

    input_index: int
    shards: list[Shard]
    size: int
    groups: bool

    def takes(self, file: InputFile, group_bytes: int) -> bool:
        return (
            self.groups
            and self.input_index == file.input_index
            and len(self.shards) < GROUP_FILES
            and self.size + file.size <= group_bytes
        )


def _pieces(file: InputFile, task_bytes: int) -> list[tuple[int, int | None, int]]:
    if (
        file.format == "jsonl"
        and compression_of(file.url) is None
        and file.size > task_bytes
        and not is_http(file.url)  # one streamed GET: a server need not answer ranges
    ):
        return [
            (start, min(start + task_bytes, file.size), min(task_bytes, file.size - start))
            for start in range(0, file.size, task_bytes)
        ]
    if (
        file.format in ("parquet", *MEDIA_FOLDERS)
        and len(file.row_groups) > 1
        and file.size > task_bytes
    ):
        pieces, start, size = [], 0, 0
        for group, group_size in enumerate(file.row_groups):
            if size and size + group_size > task_bytes:
                pieces.append((start, group, size))
                start, size = group, 0
            size += group_size
        pieces.append((start, len(file.row_groups), size))
        return pieces
    return [(0, None, file.size)]
