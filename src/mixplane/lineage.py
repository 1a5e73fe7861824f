"""Lineage: from any output folder back to the raw inputs and configs that produced it.

Every step (`process`, `tokenize`...) writes `_manifest.json` with its config, its `inputs`
(URL, size, fingerprint), its `outputs` (path, size, hash) and its `parents` (the manifests of
the folders its inputs came from). `trace` follows `parents` to the start; `verify` recomputes
the hash of every file named on the way and reports each one that is missing or changed.

Example:
    >>> steps = trace("out/tokens")  # doctest: +SKIP
    >>> [step.kind for step in steps]  # doctest: +SKIP
    ['tokenize', 'process']
    >>> [c.url for c in verify(steps) if not c.ok]  # doctest: +SKIP
    ['out/tokens/shard-00000-000.bin']
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from mixplane.errors import InputError
from mixplane.io.atomic import is_local, join_url, local_path
from mixplane.io.urls import url_filesystem
from mixplane.manifest import MANIFEST, read_json, recompute

HASH_THREADS = 4
# A processing step's kept records: a Parquet part, or an image shard's metadata.
PART = re.compile(r"^part-\d+\.(?:meta\.)?parquet$")
IMAGE_META = ".meta.parquet"


@dataclass(frozen=True)
class RecordedFile:
    """A file a manifest vouches for: where it is and the size and hash it had."""

    url: str
    size: int | None
    hash: str
    role: str  # "output" (written by the step) or "input" (read by it)


@dataclass
class Step:
    """One manifest on the way back, with what it says about its inputs and outputs."""

    manifest_url: str
    folder: str
    manifest: dict[str, Any]
    parents: list[str]
    missing_parents: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind", "unknown"))

    @property
    def inputs(self) -> list[dict[str, Any]]:
        return list(self.manifest.get("inputs") or [])

    @property
    def outputs(self) -> list[dict[str, Any]]:
        return list(self.manifest.get("outputs") or [])

    def files(self) -> list[RecordedFile]:
        """Outputs (relative to the folder) and inputs with their recorded hashes."""
        found = []
        for output in self.outputs:
            path = output.get("path") or output.get("url")
            if path and output.get("hash"):
                url = path if "://" in path or path.startswith("/") else join_url(self.folder, path)
                found.append(RecordedFile(url, output.get("size"), output["hash"], "output"))
        for item in self.inputs:
            digest = item.get("fingerprint") or item.get("hash")
            if item.get("url") and digest:
                found.append(RecordedFile(item["url"], item.get("size"), digest, "input"))
        return found

    def raw_inputs(self, traced_folders: set[str]) -> list[dict[str, Any]]:
        """Inputs that no traced step produced: the raw data at the start of the chain."""
        return [
            item
            for item in self.inputs
            if posixpath.dirname(str(item.get("url", ""))).rstrip("/") not in traced_folders
        ]

    def summary(self) -> dict[str, Any]:
        manifest = self.manifest
        # A takedown's step says which request it answered and what it removed.
        takedown = {"takedown": manifest["takedown"]} if manifest.get("takedown") else {}
        return takedown | {
            "manifest": self.manifest_url,
            "folder": self.folder,
            "kind": self.kind,
            "created_at": manifest.get("created_at"),
            "tool_version": manifest.get("version"),
            "config_hash": manifest.get("config_hash"),
            "config": manifest.get("config"),
            "stats": manifest.get("stats"),
            "inputs": len(self.inputs),
            "outputs": len(self.outputs),
            "parents": self.parents,
            "missing_parents": self.missing_parents,
        }


@dataclass(frozen=True)
class FileCheck:
    """The verification of one recorded file."""

    step: str  # manifest URL that recorded it
    url: str
    role: str
    expected: str
    actual: str | None  # None when the file is missing
    expected_size: int | None
    actual_size: int | None
    error: str | None = None  # why the file could not be read, other than being absent

    @property
    def ok(self) -> bool:
        return self.actual == self.expected and (
            self.expected_size is None or self.actual_size == self.expected_size
        )

    @property
    def problem(self) -> str:
        if self.error:
            return f"unreadable ({self.error})"
        if self.actual is None:
            return "missing"
        if self.ok:
            return ""
        if self.expected_size is not None and self.actual_size != self.expected_size:
            return f"size {self.actual_size} differs from the recorded {self.expected_size}"
        return "content hash differs from the recorded one"

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "role": self.role,
            "step": self.step,
            "ok": self.ok,
            "problem": self.problem,
            "expected": self.expected,
            "actual": self.actual,
        }


def manifest_url_of(location: str) -> str:
    """The manifest of a folder, or the manifest itself when given one (local: absolute)."""
    location = location.rstrip("/")
    if is_local(location):
        location = os.path.abspath(local_path(location))
    return location if location.endswith(MANIFEST) else join_url(location, MANIFEST)


def trace(location: str, storage_options: dict[str, Any] | None = None) -> list[Step]:
    """Every step from `location` back to the raw inputs, breadth first (the start first)."""
    first = manifest_url_of(location)
    if not _exists(first, storage_options):
        raise InputError(f"{first}: missing; lineage starts from a folder written by mixplane")
    steps: list[Step] = []
    queue, seen = [first], {first}
    while queue:
        url = queue.pop(0)
        manifest = _read_manifest(url, storage_options)
        folder = posixpath.dirname(url)
        step = Step(url, folder, manifest, [])
        for parent in _parent_urls(manifest, folder):
            step.parents.append(parent)
            if not _exists(parent, storage_options):
                step.missing_parents.append(parent)
            elif parent not in seen:
                seen.add(parent)
                queue.append(parent)
        steps.append(step)
    return steps


def verify(
    steps: list[Step],
    storage_options: dict[str, Any] | None = None,
    on_checked: Callable[[FileCheck], None] | None = None,
) -> list[FileCheck]:
    """Recompute the hash of every file the steps record (each file once), in parallel."""

    def check(item: tuple[Step, RecordedFile]) -> FileCheck:
        step, recorded = item
        size, digest, error = None, None, None
        try:
            size, digest = recompute(recorded.hash, recorded.url, storage_options)
        except (FileNotFoundError, IsADirectoryError):
            pass
        except Exception as failure:  # e.g. no credentials for a remote input
            error = f"{type(failure).__name__}: {failure}".splitlines()[0]
        result = FileCheck(
            step.manifest_url,
            recorded.url,
            recorded.role,
            recorded.hash,
            digest,
            recorded.size,
            size,
            error,
        )
        if on_checked:
            on_checked(result)
        return result

    with ThreadPoolExecutor(HASH_THREADS) as pool:
        return list(pool.map(check, recorded_files(steps)))


def document_origin(
    steps: list[Step], document_id: str, storage_options: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Where the document `document_id` was on the way back: for each processing step that
    kept it, the output part holding it and the input file (and byte range) it was read
    from (of the files the task that wrote that part read). The last entry is nearest to the
    raw data.

    Example:
        >>> document_origin(trace("out/tokens"), "urn:uuid:9f1c...")  # doctest: +SKIP
        [{'folder': 'out/clean', 'part': 'out/clean/part-00003.parquet',
          'input': {'url': 'raw/web-0003.warc.gz', 'start': 0, 'end': None}}]
    """
    found = []
    for step in steps:
        if step.kind != "process":
            continue
        part = _part_holding(step, document_id, storage_options)
        if part is None:
            continue
        index = int(posixpath.basename(part).split("-")[1].split(".")[0])
        marker = join_url(step.folder, "_tasks", f"task-{index:05d}.json")
        try:
            task = read_json(marker, storage_options)
        except FileNotFoundError:
            task = {}
        if part.endswith(IMAGE_META):  # the sample itself is in the shard's tar
            part = part[: -len(IMAGE_META)] + ".tar"
        found.append(
            {
                "folder": step.folder,
                "part": part,
                "input": _task_input(step, task, document_id, storage_options),
            }
        )
    return found


def _task_input(step: Step, task: dict[str, Any], document_id: str, storage_options) -> Any:
    if not task:
        return None
    from mixplane.process.origin import task_input  # the processing engine only when asked

    return task_input(task, document_id, step.manifest.get("config") or {}, storage_options)


def _part_holding(
    step: Step, document_id: str, storage_options: dict[str, Any] | None
) -> str | None:
    """The kept Parquet part (or image shard metadata) of a processing step that holds
    `document_id`, if any."""
    from mixplane.catalog.engine import parquet_source, sandbox  # DuckDB only when asked

    parts = [
        join_url(step.folder, str(output["path"]))
        for output in step.outputs
        if PART.match(str(output.get("path", "")))
    ]
    if not parts:
        return None
    connection = sandbox(parts, storage_options)
    try:
        row = connection.execute(
            f"SELECT file_index FROM {parquet_source(parts)} WHERE id = ? LIMIT 1",
            [document_id],
        ).fetchone()
    finally:
        connection.close()
    return None if row is None else parts[int(row[0])]


def recorded_files(steps: list[Step]) -> list[tuple[Step, RecordedFile]]:
    """Every file the steps vouch for, once (an output of one step is often the next's input)."""
    wanted: dict[tuple[str, str], tuple[Step, RecordedFile]] = {}
    for step in steps:
        for recorded in step.files():
            wanted.setdefault((recorded.url, recorded.hash), (step, recorded))
    return list(wanted.values())


def _parent_urls(manifest: dict[str, Any], folder: str) -> list[str]:
    """Parents as manifest URLs; entries may be URLs, folders or `{"url": ...}` objects."""
    found = []
    for parent in manifest.get("parents") or []:
        if isinstance(parent, dict):
            parent = parent.get("manifest") or parent.get("url") or parent.get("path")
        if not parent:
            continue
        parent = str(parent)
        if "://" not in parent and not parent.startswith("/") and is_local(folder):
            parent = posixpath.normpath(posixpath.join(folder, parent))
        found.append(manifest_url_of(parent))
    return found


def _read_manifest(url: str, storage_options: dict[str, Any] | None) -> dict[str, Any]:
    try:
        manifest = read_json(url, storage_options)
    except ValueError as error:
        raise InputError(f"{url}: not valid JSON ({error})") from error
    if not isinstance(manifest, dict):
        raise InputError(f"{url}: a manifest is a JSON object")
    return manifest


def _exists(url: str, storage_options: dict[str, Any] | None) -> bool:
    fs, path = url_filesystem(url, storage_options)
    return fs.exists(path)


class Origins:
    """Documents followed back through their dataset's lineage, each lineage read once:
    `find(folder, id)` is `document_origin` for the dataset folder `folder`.

    Example:
        >>> Origins({}).find("tokens/web", "web-17")  # doctest: +SKIP
        [{'file': 'raw/web/crawl-0.warc.gz', 'offset': 18211, ...}]
    """

    def __init__(self, storage_options: dict[str, Any] | None = None):
        self.options = storage_options or {}
        self.steps: dict[str, list[Step]] = {}

    def find(self, folder: str, document_id: str) -> Any:
        from mixplane.catalog.sample import json_value

        if folder not in self.steps:
            self.steps[folder] = trace(folder, self.options)
        return json_value(document_origin(self.steps[folder], document_id, self.options))
