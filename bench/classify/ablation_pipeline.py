"""The ablation's data path, through mixplane's own tools from labelled documents to two
catalog selections of equal token count.

1. The splits as JSON Lines: `classifier/good.jsonl` and `classifier/bad.jsonl`,
   `pool/pool.jsonl` (with `label`, `origin` and one `draw_S` per seed),
   `heldout/heldout.jsonl`.
2. `train_fasttext` on the classifier split (DCLM's recipe: word bigrams, balanced classes).
3. `process` over the pool: `classify` in annotate mode (every score, for the classifier's
   precision and recall against the labels), and once per fraction with `keep_top` (the top
   selections, datasets `top65`, `top30`...).
4. A byte-level BPE trained on the classifier split (neither selection nor the held-out
   text), then `tokenize` of the scored pool, the top selections and the held-out documents,
   each registered in one catalog.
5. Per top selection and seed, the random selection of the pool with exactly the top
   selection's tokens (`ablation_select`), as a predicate the mixture uses.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from bench.classify.ablation_corpus import Labelled, split_of
from bench.classify.ablation_select import equal_token_fill

EVERYTHING = "TRUE"


@dataclass
class Prepared:
    """What the training runs need: the catalog, the selections and what they hold."""

    catalog: str
    vocab: int
    classifier: dict[str, Any]
    scores: dict[str, Any]
    selections: dict[str, dict[str, Any]]
    heldout_origins: list[str]


def top_name(fraction: float) -> str:
    """The dataset name of a `keep_top` fraction's selection.

    Example:
        >>> top_name(0.65)
        'top65'
    """
    return f"top{round(fraction * 100)}"


def cap_good(docs: list[Labelled], chars: int, seed: int) -> list[Labelled]:
    """Of each good origin, whole groups in a seeded order until `chars` characters are
    taken (so no origin outweighs the others); bad documents are all kept."""
    import xxhash

    groups: dict[str, dict[str, list[Labelled]]] = {}
    for doc in docs:
        groups.setdefault(doc.origin, {}).setdefault(doc.group, []).append(doc)
    kept = []
    for members in groups.values():
        if next(iter(members.values()))[0].label == "bad":
            kept += [doc for group in members.values() for doc in group]
            continue
        order = sorted(members, key=lambda g: xxhash.xxh3_64_intdigest(f"{seed}:cap:{g}".encode()))
        taken = 0
        for group in order:
            if taken >= chars:
                break
            kept += members[group]
            taken += sum(len(doc.text) for doc in members[group])
    return kept


def write_splits(folder: Path, docs: list[Labelled], seeds: int, split_seed: int) -> dict:
    """The three splits as JSON Lines under `folder`; returns documents per split and label."""
    split = {doc.id: split_of(doc.group, split_seed) for doc in docs}
    pool = [doc for doc in docs if split[doc.id] == "pool"]
    draws = [np.random.default_rng([seed, 1]).permutation(len(pool)) for seed in range(seeds)]
    rows: dict[str, list[dict]] = {"good": [], "bad": [], "pool": [], "heldout": []}
    for doc in docs:
        row = {"id": doc.id, "text": doc.text, "origin": doc.origin, "label": doc.label}
        if split[doc.id] == "classifier":
            rows[doc.label].append(row)
        elif split[doc.id] == "heldout":
            rows["heldout"].append(row)
    for index, doc in enumerate(pool):
        row = {"id": doc.id, "text": doc.text, "origin": doc.origin, "label": doc.label}
        rows["pool"].append(row | {f"draw_{s}": int(draws[s][index]) for s in range(seeds)})
    paths = {
        "good": "classifier/good.jsonl",
        "bad": "classifier/bad.jsonl",
        "pool": "pool/pool.jsonl",
        "heldout": "heldout/heldout.jsonl",
    }
    for name, relative in paths.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows[name]))
    counts = Counter((split[doc.id], doc.label) for doc in docs)
    return {f"{s}/{label}": n for (s, label), n in sorted(counts.items())}


def prepare(folder: Path, docs: list[Labelled], settings: dict[str, Any]) -> Prepared:
    """Steps 1-5 in `folder` (emptied first), for each fraction of `settings["keep_top"]`."""
    from mixplane import run_pipeline
    from mixplane.catalog import Catalog
    from mixplane.classify import train_fasttext
    from mixplane.tokenize import tokenize_dataset, train_tokenizer

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    split_counts = write_splits(folder, docs, settings["seeds"], settings["split_seed"])
    trained = train_fasttext(
        {
            "output": str(folder / "model"),
            "positive": str(folder / "classifier" / "good.jsonl"),
            "negative": str(folder / "classifier" / "bad.jsonl"),
            "seed": settings["classifier_seed"],
            "bucket": 200_000,
        }
        | settings.get("classifier_options", {})
    )
    pool = str(folder / "pool" / "pool.jsonl")
    model = str(folder / "model")
    annotate = [{"classify": {"model": model}}]
    run_pipeline({"input": pool, "output": str(folder / "scored"), "stages": annotate})
    inputs = {"pool": folder / "scored", "heldout": folder / "heldout"}
    merges = {}
    for fraction in settings["keep_top"]:
        name = top_name(fraction)
        keep = [{"classify": {"model": model, "mode": "filter", "keep_top": fraction}}]
        stats = run_pipeline({"input": pool, "output": str(folder / name), "stages": keep}).stats
        merges[name] = stats["merges"]["classify"] | {"keep_top": fraction}
        inputs[name] = folder / name
    tokenizer = str(folder / "tokenizer.json")
    vocab = train_tokenizer(
        [str(folder / "classifier" / "*.jsonl")], vocab_size=settings["vocab"], out=tokenizer
    )["vocab_size"]
    catalog = Catalog(folder / "catalog.duckdb")
    for name, source in inputs.items():
        out = folder / "tokens" / name
        tokenize_dataset(
            {"input": str(source), "output": str(out), "tokenizer": tokenizer, "eos": True}
        )
        catalog.register(str(out), name)
    return Prepared(
        catalog=str(folder / "catalog.duckdb"),
        vocab=vocab,
        classifier={
            "held_out_of_training": trained.metrics,
            "per_class": {
                key: value
                for key, value in trained.description["data"].items()
                if key not in ("positive", "negative")  # paths of this machine
            },
            "splits": split_counts,
            "keep_top_merges": merges,
        },
        scores=pool_scores(folder / "scored", {name: folder / name for name in merges}),
        selections={
            name: equal_token_selections(catalog, folder / "tokens", name, settings["seeds"])
            for name in merges
        },
        heldout_origins=sorted({doc.origin for doc in docs if doc.label == "good"}),
    )


def pool_scores(scored: Path, tops: dict[str, Path]) -> dict[str, Any]:
    """Every pool document's score (from the annotate run), label and origin, and for each
    `keep_top` run whether it kept the document."""
    table = duckdb.sql(
        f"SELECT id, quality_score, label, origin FROM read_parquet('{scored}/part-*.parquet') "
        "ORDER BY id"
    ).fetchnumpy()
    ids = np.asarray(table["id"])
    kept = {}
    for name, top in tops.items():
        chosen = duckdb.sql(f"SELECT id FROM read_parquet('{top}/part-*.parquet')").fetchnumpy()
        kept[name] = np.isin(ids, np.asarray(chosen["id"]))
    return {
        "score": np.asarray(table["quality_score"], dtype=np.float64),
        "good": np.asarray(table["label"]) == "good",
        "origin": np.asarray(table["origin"]),
        "kept": kept,
    }


def equal_token_selections(catalog: Any, tokens: Path, top: str, seeds: int) -> dict[str, Any]:
    """The `top` selection, and per seed the random selection of the pool with the same token
    count (`tokens`: the folder of the datasets' shards)."""
    target = catalog.select(EVERYTHING, [top]).tokens
    randoms: dict[int, dict[str, Any]] = {}
    for seed in range(seeds):
        column = f"draw_{seed}"
        ordered = duckdb.sql(
            f"SELECT n_tokens FROM read_parquet('{tokens}/pool/*.meta.parquet') ORDER BY {column}"
        ).fetchnumpy()["n_tokens"]
        fill = equal_token_fill(ordered.tolist(), target)
        where = fill.predicate(column)
        got = catalog.select(where, ["pool"]).tokens
        if got != target:  # the fill is exact by construction; the catalog must agree
            raise RuntimeError(f"random selection of seed {seed} holds {got} tokens, not {target}")
        randoms[seed] = {
            "dataset": "pool",
            "where": where,
            "tokens": got,
            "prefix_documents": fill.cut,
            "dropped_from_prefix": len(fill.dropped),
            "filler_documents": len(fill.fillers),
            "filler_tokens": int(ordered[list(fill.fillers)].sum()),
        }
    selections = {"top": {"dataset": top, "where": None, "tokens": target}, "random": randoms}
    for selection in [selections["top"], *randoms.values()]:
        folder = tokens / selection["dataset"]
        selection["composition"] = composition(folder, selection["where"] or EVERYTHING)
    return selections


def composition(folder: Path, where: str) -> dict[str, Any]:
    """Documents and tokens of the documents of `folder`'s shards matching `where`, in all
    and by label and by origin."""
    rows = duckdb.sql(
        "SELECT label, origin, count(*), sum(n_tokens) "
        f"FROM read_parquet('{folder}/*.meta.parquet') WHERE {where} GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    out: dict[str, Any] = {"documents": 0, "tokens": 0, "by": {}}
    for label, origin, documents, tokens in rows:
        out["documents"] += documents
        out["tokens"] += int(tokens)
        for key in (f"label={label}", f"origin={origin}"):
            entry = out["by"].setdefault(key, {"documents": 0, "tokens": 0})
            entry["documents"] += documents
            entry["tokens"] += int(tokens)
    return out
