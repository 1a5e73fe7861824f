"""Benchmark data: a three-component catalog of synthetic tokens, and the same packed
sequences laid out for each tool we compare against.

- `catalog.duckdb` with datasets wiki (40% of tokens), code (30%) and web (30%, a quarter of
  it German), written by the store's own writer (uint16 tokens, documents of 1..1400 tokens);
- `mixture.yaml`: wiki 0.5, code 0.3, web_de 0.2, seq_len 2048;
- `packed/`: the first sequences of that mixture's stream, read once by mixplane: all of them
  in stream order (`all.npy`, for the np.memmap limit) and per component (`COMPONENT.npy`,
  the same sequences each tool blends again from three sources).

Everything is kept under bench/data/loader/TOKENS and reused when the sizes match.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import yaml

WEIGHTS = {"wiki": 0.5, "code": 0.3, "web_de": 0.2}
SHARES = {"wiki": 0.4, "code": 0.3, "web": 0.3}
MEAN_TOKENS = 700


def mixture_spec(catalog: Path, seq_len: int) -> dict:
    return {
        "catalog": str(catalog),
        "seq_len": seq_len,
        "seed": 1234,
        "eos_id": 0,
        "cache_dir": str(catalog.parent / "cache"),
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": WEIGHTS["wiki"]},
            "code": {"where": "source = 'code'", "weight": WEIGHTS["code"]},
            "web_de": {
                "where": "source = 'web' AND language = 'de'",
                "weight": WEIGHTS["web_de"],
            },
        },
    }


def prepare(folder: Path, tokens: int, seq_len: int, sequences: int) -> dict:
    """Build (or reuse) the catalog and the packed copies; returns paths and timings."""
    from mixplane.load.tools.synthetic import write_catalog

    folder.mkdir(parents=True, exist_ok=True)
    stamp = folder / "_bench.json"
    wanted = {"tokens": tokens, "seq_len": seq_len, "sequences": sequences, "format": 1}
    folder = folder.resolve()
    catalog = folder / "catalog.duckdb"
    mixture = folder / "mixture.yaml"
    timings = {}
    if not stamp.exists() or json.loads(stamp.read_text()) != wanted:
        for child in ("catalog.duckdb", "cache", "packed", "mds", "hf", *SHARES):
            path = folder / child
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(True)
        started = time.perf_counter()
        datasets = dataset_settings(tokens)
        write_catalog(str(folder), datasets, catalog=str(catalog))
        timings["generate_seconds"] = time.perf_counter() - started
        mixture.write_text(yaml.safe_dump(mixture_spec(catalog, seq_len), sort_keys=False))
        started = time.perf_counter()
        pack(mixture, folder / "packed", sequences)
        timings["pack_seconds"] = time.perf_counter() - started
        stamp.write_text(json.dumps(wanted))
    return {"catalog": str(catalog), "mixture": str(mixture), **timings}


def dataset_settings(tokens: float, **extra) -> dict[str, dict]:
    """`write_catalog` settings of the benchmark's datasets for `tokens` tokens in all."""
    return {
        name: {
            "documents": int(tokens * share / MEAN_TOKENS),
            "seed": seed,
            "source": name,
            "mean_tokens": MEAN_TOKENS,
            "vocab_size": 50_000,
            **extra,
        }
        for seed, (name, share) in enumerate(SHARES.items())
    }


def pack(mixture: Path, out: Path, sequences: int) -> None:
    """The first `sequences` of the stream, in order and split by component."""
    from mixplane.load import MixtureDataset

    dataset = MixtureDataset(mixture, dtype="uint16", boundaries="none")
    arrays = dataset.read_positions(np.arange(sequences))
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "all.npy", arrays["input_ids"])
    np.save(out / "components.npy", arrays["component"])
    for c, name in enumerate(dataset.names):
        np.save(out / f"{name}.npy", arrays["input_ids"][arrays["component"] == c])
