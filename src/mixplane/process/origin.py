"""Which input file of a task a document was read from, for lineage.

A task reads one shard, or several small files of one input in turn; its completion marker
lists them (`shards`: url, name, format, start, end) and its input's index. A document whose
id its reader made (`NAME@OFFSET`, `NAME#ROW`) names its file; one with an id of its own is
looked for in the task's files, which are small by construction (a task groups files only up
to 64 MB).

Example:
    >>> task_input(marker, "wiki/a.jsonl@120", manifest["config"])  # doctest: +SKIP
    {'url': 'raw/wiki/a.jsonl', 'start': 0, 'end': None}
"""

from __future__ import annotations

from typing import Any


def task_input(
    marker: dict[str, Any],
    document_id: str,
    config: dict[str, Any],
    storage_options: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The entry (url, start, end) of the marker's shard that holds `document_id`, or None
    when none does (an input changed since, or a marker from before shards were listed)."""
    shards = marker.get("shards")
    if shards is None:
        return marker.get("shard")  # a marker written before tasks could group files
    if len(shards) == 1:
        return _entry(shards[0])
    for shard in shards:
        if document_id.startswith((f"{shard['name']}@", f"{shard['name']}#")):
            return _entry(shard)
    return _search(marker, shards, document_id, config, storage_options)


def _search(marker, shards, document_id: str, config, storage_options) -> dict[str, Any] | None:
    """Read the task's files for the record with that id (the readers only now: a service
    without the processing stack still answers for tasks of one file)."""
    from mixplane.io.readers import ReadStats, Shard, reader_for
    from mixplane.process.config import PipelineConfig
    from mixplane.process.runner import input_read_options

    settings = PipelineConfig.model_validate(config | {"storage_options": storage_options or {}})
    options = input_read_options(settings, marker["input"])
    for shard in shards:
        found = Shard(shard["url"], shard["name"], shard["format"], shard["start"], shard["end"])
        for record in reader_for(found.format)(found, options, ReadStats()):
            if getattr(record, "id", None) == document_id:
                return _entry(shard)
    return None


def _entry(shard: dict[str, Any]) -> dict[str, Any]:
    return {key: shard[key] for key in ("url", "start", "end")}
