"""Mixtures several test files build, written once."""

from __future__ import annotations

from pathlib import Path

# Unpacked mixtures (`packing: none`): their end of document, padding and sizes.
EOS, PAD = 0, 7
SEQ_LEN = 96
BUDGET = 1024


def three_sources() -> dict:
    """The README's components: wiki, code and German web text, weighted 5:3:2.

    A new dict each call, so a test may change its copy. Loader tests write catalogs with
    these sources and mix them with their own seeds and sequence lengths."""
    return {
        "wiki": {"where": "source = 'wiki'", "weight": 0.5},
        "code": {"where": "source = 'code'", "weight": 0.3},
        "web_de": {"where": "source = 'web' AND language = 'de'", "weight": 0.2},
    }


def demo_mixture() -> dict:
    """The service tests' mixture over the demo's catalog: wiki and code, 0.6 and 0.4."""
    return {
        "seq_len": 128,
        "datasets": ["demo"],
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.6},
            "code": {"where": "source = 'code'", "weight": 0.4},
        },
    }


def unpacked_catalog(folder: str, code_shard_bytes: int | None = None) -> str:
    """Three datasets for unpacked mixtures (see `unpacked_mixture`): wiki documents some
    longer than SEQ_LEN (their rows are cut, without the EOS), code tokenized with its EOS
    already (nothing is appended), and web; `code_shard_bytes` splits code into small
    shards. Returns the catalog's path."""
    from mixplane.load.tools.synthetic import write_catalog

    code = {"documents": 90, "seed": 2, "source": "code", "mean_tokens": 80, "eos_id": EOS}
    if code_shard_bytes is not None:
        code["shard_bytes"] = code_shard_bytes
    return write_catalog(
        folder,
        {
            "wiki": {"documents": 120, "seed": 1, "source": "wiki", "mean_tokens": 60},
            "code": code,
            "web": {"documents": 150, "seed": 3, "source": "web", "mean_tokens": 40},
        },
    )


def unpacked_mixture(catalog: str, **fields) -> dict:
    """The three sources as whole documents in padded batches, bucketed by length (a
    BUDGET of padded tokens per batch), with `fields` changed."""
    return {
        "catalog": catalog,
        "cache_dir": str(Path(catalog).parent / "cache"),
        "seq_len": SEQ_LEN,
        "seed": 11,
        "eos_id": EOS,
        "pad_id": PAD,
        "packing": "none",
        "bucketing": {"max_tokens_per_batch": BUDGET, "window": 100},
        "components": three_sources(),
    } | fields
