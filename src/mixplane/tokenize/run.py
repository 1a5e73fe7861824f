"""Tokenizing a whole dataset: plan one task per input file, run them, write the manifest.

Example:
    >>> result = tokenize_dataset(
    ...     {"input": "clean/", "output": "tokens/", "tokenizer": "tokenizer.json", "eos": True}
    ... )  # doctest: +SKIP
    >>> result.stats["tokens"]  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import xxhash

from mixplane.io.atomic import join_url, remove_stale_temporaries, write_bytes
from mixplane.manifest import find_parent_manifests, write_manifest
from mixplane.process.executors import ExecutorSettings, execute, ray_session
from mixplane.process.shared_paths import NodePath, check_nodes_see
from mixplane.store.format import FILE_SUFFIXES, FORMAT_NAME, format_version, token_dtype
from mixplane.tokenize.base import Tokenizer
from mixplane.tokenize.chat import ChatTemplate, find_chat_template, special_text
from mixplane.tokenize.config import TokenizeConfig
from mixplane.tokenize.inputs import find_input_files
from mixplane.tokenize.task import TokenizeContext, TokenizeTask, run_tokenize_task, task_tokenizer


@dataclass
class TokenizeResult:
    """What a run produced: totals, per-task markers and the manifest's URL."""

    stats: dict[str, Any]
    tasks: list[dict[str, Any]]
    manifest: str
    seconds: float


def plan(config: TokenizeConfig) -> list[TokenizeTask]:
    """One task per input file, numbered in a stable order (inputs, then URLs)."""
    files = find_input_files(config.input, config.storage_options)
    return [TokenizeTask(index, file) for index, file in enumerate(files)]


def node_paths(config: TokenizeConfig, tasks: list[TokenizeTask]) -> list[NodePath]:
    """What every host running tasks must see: the output and each input's first file
    (the tokenizer travels with the tasks)."""
    firsts: dict[int, str] = {}
    for task in tasks:
        firsts.setdefault(task.file.input_index, task.file.url)
    return [
        NodePath(config.output, "output", writes=True),
        *(NodePath(url, "input file") for url in firsts.values()),
    ]


def tokenize_dataset(
    config: TokenizeConfig | dict[str, Any],
    on_planned: Callable[[list[TokenizeTask]], None] | None = None,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> TokenizeResult:
    """Tokenize every input file not yet done, then write `_stats.json` and `_manifest.json`."""
    started = time.perf_counter()
    if isinstance(config, dict):
        config = TokenizeConfig.parse(config)
    parallel = config.workers > 1 or config.executor == "ray"
    threads = 1 if parallel else None
    # Load here first: a bad spec or missing BOS/EOS fails before any task starts.
    probe = TokenizeContext(config, "", threads)
    tokenizer = task_tokenizer(probe)
    saved = tokenizer.embedded()
    template = chat_template(config, tokenizer)
    fingerprint = tokenizer.fingerprint()
    if template is not None:  # the template decides the tokens as much as the tokenizer
        fingerprint += f" chat:{template.fingerprint}"
    config_hash = config.outputs_hash(fingerprint)
    context = TokenizeContext(config, config_hash, threads, saved, template)
    remove_stale_temporaries(config.output)  # what a killed run was writing
    tasks = plan(config)
    if on_planned:
        on_planned(tasks)
    settings = ExecutorSettings(config.workers, config.executor, config.ray_address)
    with ray_session(settings):
        check_nodes_see(node_paths(config, tasks), [], settings)
        results = execute(run_tokenize_task, tasks, context, settings, on_done)
    options = config.storage_options

    describe = tokenizer.describe() | {"dtype": token_dtype(tokenizer.vocab_size).name}
    outputs = []
    if saved is not None:
        write_bytes(join_url(config.output, saved.file_name), saved.content, options)
        describe["file"] = saved.file_name
        digest = f"xxh3_128:{xxhash.xxh3_128_hexdigest(saved.content)}"
        outputs.append({"path": saved.file_name, "size": len(saved.content), "hash": digest})
    shards = [shard for result in results for shard in result["shards"]]
    for shard in shards:
        for key, suffix in FILE_SUFFIXES.items():
            if key not in shard["files"]:  # a shard written before `.sums` existed
                continue
            file = shard["files"][key]
            path = shard["name"] + suffix
            outputs.append({"path": path, "size": file["size"], "hash": file["hash"]})
            outputs[-1]["records"] = shard["documents"]
    outputs.extend(output for result in results for output in result.get("outputs", []))

    stats = merge_task_stats(results)
    stats["tokens_per_second"] = round(stats["tokens"] / max(time.perf_counter() - started, 1e-9))
    write_bytes(
        join_url(config.output, "_stats.json"),
        orjson.dumps(stats, option=orjson.OPT_INDENT_2),
        options,
    )
    inputs = [result["input"] for result in results]
    manifest = write_manifest(
        config.output,
        {
            "kind": "tokenize",
            "format": {"name": FORMAT_NAME, "version": format_version(template is not None)},
            "config": config.model_dump(mode="json", exclude={"storage_options"}),
            "config_hash": context.config_hash,
            "tokenizer": describe,
            **({"chat_template": template.source} if template is not None else {}),
            "inputs": inputs,
            "parents": find_parent_manifests([i["url"] for i in inputs], options),
            "totals": {k: stats[k] for k in ("documents", "tokens", "shards")},
            "shards": shards,
            "outputs": outputs,
            "stats": {k: stats[k] for k in ("documents", "tokens", "quarantined")},
        },
        options,
    )
    return TokenizeResult(stats, results, manifest, time.perf_counter() - started)


def chat_template(config: TokenizeConfig, tokenizer: Tokenizer) -> ChatTemplate | None:
    """The chat template conversations are rendered with (None for plain text): the config's,
    else the tokenizer folder's, given the BOS and EOS text its `tokenizer_config.json`
    names, else those the tokenizer has."""
    if config.chat is None:
        return None
    source, settings = find_chat_template(config.chat, config.tokenizer, config.storage_options)
    texts = []
    for role in ("bos", "eos"):
        text = special_text(settings, f"{role}_token") or getattr(tokenizer, f"{role}_token")
        texts.append(text)
    template = ChatTemplate(source, texts[0], texts[1])
    template.compile()  # a template that does not compile fails here, before any task
    return template


def merge_task_stats(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum the tasks' counts and seconds."""
    totals: Counter = Counter()
    seconds: Counter = Counter()
    for result in results:
        for key in ("documents", "tokens", "quarantined", "text_chars"):
            totals[key] += result["stats"][key]
        seconds.update(result["stats"]["seconds"])
    merged = {key: totals[key] for key in ("documents", "tokens", "quarantined", "text_chars")}
    merged["shards"] = sum(len(result["shards"]) for result in results)
    merged["tasks"] = len(results)
    merged["skipped_tasks"] = sum(1 for result in results if result.get("skipped"))
    merged["seconds"] = {key: round(value, 3) for key, value in seconds.items()}
    return merged
