"""Where annotate reads each document's text: the files the version was tokenized from
("parts"), or its tokens, decoded ("tokens").

The documents of a tokenized version are exactly those `mixplane tokenize` read from its input
files (a processing run's parts, or raw files), in their order: input file `T` became shards
`shard-T-000`, `shard-T-001`... (with `group_by`, each shard takes the next documents of one
value). Reading the files again the way tokenize read them gives every document's original
text, and each document's id is checked against its shard's metadata. That needs the files to
be there and unchanged: their fingerprints are compared with the ones the version's manifest
recorded. Otherwise the tokens are decoded with the tokenizer saved beside the shards, without
the BOS and EOS added at tokenization; a byte-level BPE (what `mixplane train-tokenizer` makes)
decodes to the original text exactly.

Example:
    >>> source = choose_text_source(version, manifest, "auto", {})  # doctest: +SKIP
    >>> source.kind, source.reason  # doctest: +SKIP
    ('tokens', 'decoded from tokens, because clean/part-00000.parquet is gone')
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq

from mixplane.catalog.dataset import list_folder
from mixplane.catalog.registry import DatasetVersion
from mixplane.errors import ConfigError, MixplaneError
from mixplane.io.urls import url_filesystem
from mixplane.manifest import file_fingerprint
from mixplane.process.config import InputConfig
from mixplane.process.tasks import InputFile
from mixplane.store.format import BIN, IDX
from mixplane.tokenize.inputs import Batch, read_batches

PARTS, TOKENS = "parts", "tokens"


@dataclass(frozen=True)
class TextSource:
    """The text source chosen for a run, and why.

    `files` (parts only): the input file of each tokenize task, by task number; `specs`: the
    tokenize inputs they belong to (text and id fields); `inputs`: what the run reads, as its
    manifest records it.
    """

    kind: str
    reason: str
    files: tuple[InputFile, ...] = ()
    specs: tuple[InputConfig, ...] = ()
    group_by: str | None = None
    inputs: tuple[dict[str, Any], ...] = field(default=(), repr=False)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason}


def choose_text_source(
    version: DatasetVersion,
    manifest: dict[str, Any],
    wanted: str,
    storage_options: dict[str, Any],
) -> TextSource:
    """The text source for `version` (`manifest`: its stored manifest): `wanted` ("parts",
    "tokens"), or with "auto" the parts when they are there and unchanged, else the tokens.
    Raises `ConfigError` in one line when the wanted source, or with "auto" either, is
    unavailable."""
    parts = None if wanted == TOKENS else _parts(version, manifest, storage_options)
    if isinstance(parts, TextSource):
        return parts
    tokens = None if wanted == PARTS else _tokens(version, manifest, storage_options)
    if wanted == PARTS:
        raise ConfigError(f"{version.ref}: cannot read the text from its parts: {parts}")
    if isinstance(tokens, TextSource):
        reason = "as asked (text: tokens)" if wanted == TOKENS else f"because {parts}"
        return TextSource(TOKENS, f"decoded from tokens, {reason}", inputs=tokens.inputs)
    if wanted == TOKENS:
        raise ConfigError(f"{version.ref}: cannot decode its tokens: {tokens}")
    raise ConfigError(
        f"{version.ref}: no text to score: {parts}, and its tokens cannot be decoded "
        f"({tokens}); restore the files it was tokenized from, or its token files"
    )


def _parts(
    version: DatasetVersion, manifest: dict[str, Any], storage_options: dict[str, Any]
) -> TextSource | str:
    """The parts as a text source, or why they cannot be one."""
    from mixplane.tokenize.config import TokenizeConfig
    from mixplane.tokenize.run import plan

    recorded = [item for item in manifest.get("inputs") or [] if isinstance(item, dict)]
    if not recorded:
        return "its manifest lists no files it was tokenized from"
    for item in recorded:
        fs, path = url_filesystem(str(item.get("url")), storage_options)
        if not fs.exists(path):
            return f"{item.get('url')} is gone"
    try:
        config = TokenizeConfig.parse(manifest.get("config") or {}, "its tokenize config")
        config = config.model_copy(update={"storage_options": storage_options})
        files = [task.file for task in plan(config)]
    except (MixplaneError, OSError) as error:
        return f"the files it was tokenized from cannot be listed again ({error})"
    urls = [file.url for file in files]
    listed = [str(item.get("url")) for item in recorded]
    if urls != listed:
        extra = sorted(set(urls) - set(listed))
        return f"its input folders changed since it was tokenized ({extra[0] if extra else ''})"
    for item in recorded:
        _, fingerprint = file_fingerprint(item["url"], storage_options)
        if fingerprint != item.get("fingerprint"):
            return f"{item['url']} changed since it was tokenized"
    folders = sorted({file.url.rsplit("/", 1)[0] for file in files})
    return TextSource(
        PARTS,
        f"read from the files it was tokenized from ({', '.join(folders)})",
        tuple(files),
        tuple(config.input),
        config.group_by,
        tuple(recorded),
    )


def _tokens(
    version: DatasetVersion, manifest: dict[str, Any], storage_options: dict[str, Any]
) -> TextSource | str:
    """The tokens as a text source, or why they cannot be one."""
    from mixplane.store.dataset import TokenizedDataset
    from mixplane.tokenize.load import dataset_tokenizer

    try:
        present = list_folder(version.uri, storage_options)
        for stem in version.stems:
            for suffix in (BIN, IDX):
                if stem + suffix not in present:
                    return f"{stem}{suffix} is gone"
        dataset_tokenizer(TokenizedDataset(version.uri, storage_options))
    except (MixplaneError, OSError, ImportError) as error:
        return str(error)
    bins = {stem + BIN for stem in version.stems}
    inputs = tuple(
        {"url": f"{version.uri}/{entry['path']}", "size": entry["size"], "hash": entry["hash"]}
        for entry in manifest.get("outputs") or []
        if entry.get("path") in bins
    )
    return TextSource(TOKENS, "decoded from tokens", inputs=inputs)


class PartDocuments:
    """The documents of one input file in the order tokenize read them, handed out by group
    value (None without `group_by`): `take(value, n)` gives the next `n` documents of that
    value, as `(ids, texts)`, reading the file only as far as needed."""

    def __init__(
        self,
        file: InputFile,
        spec: InputConfig,
        group_by: str | None,
        batch_size: int,
        storage_options: dict[str, Any],
    ):
        self.url = file.url
        self.group_by = group_by
        self.batches: Iterator[Batch] = read_batches(file, spec, batch_size, storage_options)
        self.pending: dict[Any, deque[tuple[str, str]]] = {}

    def take(self, value: Any, count: int) -> tuple[list[str], list[str]]:
        queue = self.pending.setdefault(value, deque())
        while len(queue) < count:
            if not self._read():
                raise MixplaneError(
                    f"{self.url}: holds fewer documents than the shards made from it; the "
                    "file changed since it was tokenized: annotate with text: tokens"
                )
        taken = [queue.popleft() for _ in range(count)]
        return [doc_id for doc_id, _ in taken], [text for _, text in taken]

    def finish(self) -> None:
        """Refuse a file holding documents beyond those its shards hold."""
        if any(self.pending.values()) or self._read():
            raise MixplaneError(
                f"{self.url}: holds more documents than the shards made from it; the file "
                "changed since it was tokenized: annotate with text: tokens"
            )

    def _read(self) -> bool:
        batch = next(self.batches, None)
        if batch is None:
            return False
        ids = [str(doc_id) for doc_id in batch.meta.column("id").to_pylist()]
        if self.group_by is None:
            values = [None] * len(ids)
        elif self.group_by in batch.meta.column_names:
            values = batch.meta.column(self.group_by).to_pylist()
        else:
            raise MixplaneError(f"{self.url}: documents without the group_by property")
        for doc_id, text, value in zip(ids, batch.texts, values, strict=True):
            self.pending.setdefault(value, deque()).append((doc_id, text))
        return True


def shard_group(meta_url: str, group_by: str | None, storage_options: dict[str, Any]) -> Any:
    """The `group_by` value every document of a shard has (None without `group_by`)."""
    if group_by is None:
        return None
    fs, path = url_filesystem(meta_url, storage_options)
    with fs.open(path, "rb") as handle:
        column = pq.ParquetFile(handle).read_row_group(0, columns=[group_by]).column(0)
    return column[0].as_py()


def shard_ids(meta_url: str, storage_options: dict[str, Any]) -> list[str]:
    """Every document id of a shard, in order."""
    fs, path = url_filesystem(meta_url, storage_options)
    with fs.open(path, "rb") as handle:
        return [str(i) for i in pq.read_table(handle, columns=["id"]).column(0).to_pylist()]
