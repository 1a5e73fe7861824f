"""Checking the source names that limit stages (`sources: [web]`) against the inputs.

A stage limited to a source no record has never runs, silently; so an unknown name is an
error before any work starts. A document's source is, in this order: its input's `source`,
the record's own `source` field, the name of the folder holding its file (of the dataset,
for saved Hugging Face datasets). The first is known from the config alone; the last needs
the input files; records naming their own sources make the set open, so then any name is
accepted.

Example:
    >>> check_stage_sources(config, scan_inputs(config.input, {}))  # doctest: +SKIP
"""

from __future__ import annotations

from mixplane.errors import ConfigError
from mixplane.io.readers import arrow, imagefolder, jsonl, parquet
from mixplane.io.readers.base import folder_source
from mixplane.process.config import PipelineConfig
from mixplane.process.tasks import InputFile

# Readers whose records may name their own source, with how to tell from a file.
_RECORD_SOURCES = {
    "jsonl": jsonl.has_source_field,
    "parquet": parquet.has_source_column,
    "hf_disk": arrow.has_source_column,
}


def check_stage_sources(config: PipelineConfig, files: list[InputFile]) -> None:
    """Raise ConfigError for a stage limited to a source that no input's records have."""
    wanted = _wanted(config)
    if not wanted:
        return
    known = {spec.source for spec in config.input if spec.source}
    open_inputs: dict[int, InputFile] = {}
    for file in files:
        if config.input[file.input_index].source:
            continue
        known.add(file_source(file, config.storage_options))
        open_inputs.setdefault(file.input_index, file)
    unknown = [(stage, name) for stage, name in wanted if name not in known]
    if not unknown:
        return
    # Only now (a name is missing) look inside files; the first file of an input stands for
    # the input, since its records share one layout.
    for file in open_inputs.values():
        peek = _RECORD_SOURCES.get(file.format)
        if peek is not None and peek(file.url, config.storage_options):
            return
    raise _unknown_source(unknown[0], known)


def file_source(file: InputFile, storage_options: dict) -> str:
    """The source a file's records get when neither their input nor they name one (the
    same rule the readers follow)."""
    if file.format == "hf_disk":
        return arrow.dataset_source(file.url, storage_options)
    if file.format in imagefolder.MEDIA_FOLDERS:
        return imagefolder.dataset_source(file.url)
    return folder_source(file.url)


def check_declared_sources(config: PipelineConfig) -> None:
    """The check from the config alone, possible when every input names its source."""
    if all(spec.source for spec in config.input):
        known = {spec.source for spec in config.input}
        for stage, name in _wanted(config):
            if name not in known:
                raise _unknown_source((stage, name), known)


def _wanted(config: PipelineConfig) -> list[tuple[str, str]]:
    return [(stage.name, name) for stage in config.stages for name in stage.sources or ()]


def _unknown_source(missing: tuple[str, str], known: set[str]) -> ConfigError:
    stage, name = missing
    return ConfigError(
        f"stage {stage!r} is limited to source {name!r}, which no input has; the inputs' "
        f"sources are: {', '.join(sorted(known))}. A source is the input's 'source', else "
        "a record's own 'source' field, else the name of the folder holding the file"
    )
