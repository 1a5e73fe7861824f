"""`mixplane annotate`: a classifier's scores added to a registered version as a new column,
with the version's token files shared, not copied."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import write_jsonl
from readme_blocks import readme_block
from test_classify import SMALL, good_text, spam_text, write_corpus

from mixplane.annotate import annotate_dataset
from mixplane.catalog import Catalog
from mixplane.catalog.columns import COLUMN_SUFFIX
from mixplane.catalog.composition import histogram
from mixplane.classify import load_classifier, train_fasttext
from mixplane.errors import ConfigError, MixplaneError
from mixplane.lineage import trace
from mixplane.load.dataset import MixtureDataset
from mixplane.load.read.pieces import ADDED_SUFFIX
from mixplane.load.tools.trace import trace as trace_step
from mixplane.process.pipeline import run_pipeline
from mixplane.tokenize.run import tokenize_dataset
from mixplane.tokenize.train import train_tokenizer

QUALITY_MD = Path(__file__).parent.parent / "docs" / "quality.md"


def web_text(number: int) -> str:
    """Prose or spam, so scores spread over both ends; some with newlines and odd spaces."""
    if number % 3 == 0:
        return good_text(7000 + number).replace(". ", ".\n", 1)
    return spam_text(number) + ("  \u00a0end" if number % 5 == 0 else "")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A quality model trained on another corpus, and a tokenizer trained on the web text."""
    root = tmp_path_factory.mktemp("annotate")
    write_raw(root)
    train_tokenizer(str(root / "raw"), 400, str(root / "tok.json"))
    training = write_corpus(root / "training", 120)
    train_fasttext(
        {
            "output": str(root / "models" / "quality"),
            "positive": str(training / "wiki"),
            "negative": str(training / "web"),
        },
        **SMALL,
        lr=0.5,
    )
    return root


def write_raw(root: Path) -> None:
    """Two files of web text; `kind` takes turns irregularly (for shards grouped by it)."""
    rows = [{"id": f"a{i}", "text": web_text(i), "kind": "xy"[i % 3 == 1]} for i in range(60)]
    write_jsonl(root / "raw" / "web" / "a.jsonl", rows)
    rows = [{"id": f"b{i}", "text": web_text(100 + i), "kind": "xy"[i % 2]} for i in range(45)]
    write_jsonl(root / "raw" / "web" / "b.jsonl", rows)


@pytest.fixture
def work(built: Path, tmp_path: Path, monkeypatch) -> Path:
    """As the current directory: raw web text processed into `clean/`, tokenized into
    `tokens/` (EOS added, a few shards per part) and registered as `web@1`, and the model."""
    shutil.copytree(built / "models", tmp_path / "models")
    write_raw(tmp_path)
    run_pipeline(
        {"input": str(tmp_path / "raw" / "web" / "*.jsonl"), "output": str(tmp_path / "clean")}
    )
    tokenize_dataset(
        {
            "input": str(tmp_path / "clean"),
            "output": str(tmp_path / "tokens"),
            "tokenizer": str(built / "tok.json"),
            "eos": True,
            "shard_size_mb": 0.004,
        }
    )
    Catalog(tmp_path / "catalog.duckdb").register(str(tmp_path / "tokens"), "web")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def annotate(work: Path, **options):
    config = {"dataset": "web@1", "classifier": "models/quality", "as": "quality"}
    return annotate_dataset(config | {"catalog": str(work / "catalog.duckdb")} | options)


def column_values(folder: str) -> dict[str, list[float]]:
    return {
        path.name: pq.read_table(path).column(0).to_pylist()
        for path in sorted(Path(folder).glob("*.parquet"))
    }


def expected_scores(work: Path) -> dict[str, float]:
    """Each document's score, by id, straight from the model on the processed text."""
    rows = pa.concat_tables(
        [pq.read_table(p) for p in sorted((work / "clean").glob("part-*.parquet"))]
    ).to_pylist()
    model = load_classifier(work / "models" / "quality")
    scores = model.scores([row["text"] for row in rows], "hq")
    return {row["id"]: float(score) for row, score in zip(rows, scores, strict=True)}


def test_annotate_adds_the_column_as_a_new_version_sharing_the_token_files(work: Path):
    result = annotate(work)
    catalog = Catalog(work / "catalog.duckdb")
    old, new = catalog.get("web@1"), catalog.get("web@2")
    assert result.version.ref == "web@2" and result.created
    assert result.text["kind"] == "parts"
    # The same shards in the same folder: the loader reads the very same files.
    assert new.uri == old.uri and new.shards == old.shards
    assert len(old.shards) > 2
    token_files = sorted((work / "tokens").glob("shard-*"))
    inodes = {path.name: path.stat().st_ino for path in token_files}
    assert sorted((work / "tokens").glob("shard-*")) == token_files
    # What was written: one small file per shard holding only the new column, and a manifest.
    folder = Path(result.column.folder)
    assert folder.parent == work / "tokens" / "_columns"
    written = sorted(p.name for p in folder.iterdir())
    assert written == sorted([f"{s.stem}.parquet" for s in new.shards] + ["_manifest.json"])
    for shard in new.shards:
        table = pq.read_table(folder / f"{shard.stem}.parquet")
        assert table.column_names == ["quality"] and table.num_rows == shard.documents
    assert result.written_bytes == sum(p.stat().st_size for p in folder.iterdir())
    assert result.shared_bytes == sum(p.stat().st_size for p in token_files)
    assert {p.name: p.stat().st_ino for p in token_files} == inodes
    # The version's schema has the column; the scores are the model's on each document.
    assert new.schema["quality"] == "DOUBLE" and "quality" not in old.schema
    expected = expected_scores(work)
    ids = [
        i
        for shard in new.shards
        for i in pq.read_table(work / "tokens" / f"{shard.stem}.meta.parquet")["id"].to_pylist()
    ]
    scores = [v for values in column_values(folder).values() for v in values]
    by_id = dict(zip(ids, scores, strict=True))
    assert by_id == pytest.approx(expected, abs=0, rel=0)
    assert min(scores) < 0.2 and max(scores) > 0.8  # the test sees both ends


def test_where_selects_by_the_new_column(work: Path):
    annotate(work)
    catalog = Catalog(work / "catalog.duckdb")
    expected = expected_scores(work)
    selection = catalog.select("quality >= 0.8 AND n_tokens > 0", ["web@2"])
    part = selection["web@2"]
    shards, indices = part.document_indices()
    new = catalog.get("web@2")
    metas = {
        i: pq.read_table(work / "tokens" / f"{s.stem}.meta.parquet")["id"].to_pylist()
        for i, s in enumerate(new.shards)
    }
    chosen = {metas[s][i] for s, i in zip(shards.tolist(), indices.tolist(), strict=True)}
    assert chosen == {i for i, score in expected.items() if score >= 0.8}
    assert 0 < len(chosen) < len(expected)
    # The dashboard's histogram of the column counts every document once.
    with catalog.session() as session:
        buckets = histogram(session, "quality", "n_tokens > 0", ["web@2"], bins=5)
    assert sum(b["documents"] for b in buckets["bins"]) == len(expected)
    top = buckets["bins"][-1]
    assert top["documents"] == sum(1 for s in expected.values() if top["low"] <= s)
    # The old version has no such column.
    with pytest.raises(MixplaneError, match="quality"):
        catalog.select("quality >= 0.8", ["web@1"])
    # A second column on top: both join, and lineage leads through both.
    second = annotate(work, dataset="web@2", text="tokens", **{"as": "inverse"}, label="lq")
    assert second.version.ref == "web@3"
    assert [c.name for c in second.version.added] == ["quality", "inverse"]
    both = catalog.select("quality >= 0.8 AND inverse < 0.5", ["web@3"])["web@3"]
    assert both.documents == part.documents
    assert [s.kind for s in trace(second.version.lineage_root)] == [
        "annotate",
        "annotate",
        "tokenize",
        "process",
    ]
    # Files of a column removed since registration: the version is refused, naming them.
    next(Path(second.column.folder).glob("*.parquet")).unlink()
    with pytest.raises(MixplaneError, match="of its column 'inverse' .* is missing"):
        catalog.select("inverse > 0", ["web@3"])


def test_the_command_annotates_and_lineage_shows_where_the_column_came_from(work: Path, cli):
    code, out, err = cli(
        "annotate", "web@1", "--classifier", "models/quality", "--as", "quality", "--json"
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["dataset"] == "web@2" and summary["source"] == "web@1"
    assert summary["text"]["kind"] == "parts"
    sha = json.loads((work / "models" / "quality" / "classifier.json").read_text())
    sha = sha["model_sha256"]
    assert summary["classifier"]["model_sha256"] == sha
    # The manifest beside the column says what made it, from what, and leads back.
    manifest = json.loads((Path(summary["folder"]) / "_manifest.json").read_text())
    assert manifest["kind"] == "annotate"
    assert manifest["source"]["dataset"] == "web@1"
    assert manifest["classifier"]["folder"] == str(work / "models" / "quality")
    assert manifest["classifier"]["model_sha256"] == sha
    assert manifest["text"]["kind"] == "parts"
    steps = trace(summary["folder"])
    assert [step.kind for step in steps] == ["annotate", "tokenize", "process"]
    # `mixplane lineage NAME@N` starts from the version's newest column.
    code, out, err = cli("lineage", "web@2", "--json")
    assert code == 0, err
    kinds = [step["kind"] for step in json.loads(out)["steps"]]
    assert kinds == ["annotate", "tokenize", "process"]
    code, out, err = cli("lineage", "web@2")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "column quality of web@1" in flat and f"sha256 {sha[:16]}" in flat
    assert "text read from the files it was tokenized from" in flat
    code, out, _ = cli("lineage", "web@1", "--json")
    assert [step["kind"] for step in json.loads(out)["steps"]] == ["tokenize", "process"]
    # The catalog lists the column with its origin; a query counts by it.
    code, out, _ = cli("catalog", "show", "web@2", "--json")
    shown = json.loads(out)
    assert shown["columns"]["quality"] == "DOUBLE"
    assert shown["added_columns"][0]["from"] == "web@1"
    code, out, err = cli("query", "quality >= 0.8", "-d", "web@2", "--json", "--sample", "2")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["documents"] > 0
    assert all(row["quality"] >= 0.8 and row["text"] for row in answer["samples"])


def test_a_mixture_over_the_new_version_selects_by_the_column(work: Path):
    annotate(work)
    expected = expected_scores(work)
    mixture = {
        "catalog": str(work / "catalog.duckdb"),
        "seq_len": 16,
        "seed": 0,
        "components": {
            "high": {"where": "quality >= 0.5", "datasets": ["web@2"], "weight": 0.7},
            "low": {"where": "quality < 0.5", "datasets": ["web@2"], "weight": 0.3},
        },
    }
    (work / "mixture.yaml").write_text(yaml.safe_dump(mixture))
    dataset = MixtureDataset("mixture.yaml")
    for c, packed in enumerate(dataset.plan.components):
        shards, documents = dataset.resolved.ranges[c].locate(np.arange(len(packed)))
        selected = {
            str(dataset.source.files.metadata_column(int(shard), "id")[int(document)])
            for shard, document in zip(shards.tolist(), documents.tolist(), strict=True)
        }
        high = dataset.names[c] == "high"
        assert selected == {i for i, s in expected.items() if (s >= 0.5) == high}
    # The sequences are read from the version's own token files.
    assert {uri for uri, _ in dataset.resolved.shards} == {str(work / "tokens")}
    batch = dataset.read_positions(np.arange(8))
    assert batch["input_ids"].shape == (8, 16)
    for piece in dataset.explain(0):
        assert (expected[piece["id"]] >= 0.5) == (piece["component"] == "high")
    dataset.close()
    # The added column is a property like the shards' own, for trace and explain.
    report = trace_step("mixture.yaml", step=0, batch_size=4, properties=["quality", "n_tokens"])
    pieces = [piece for sequence in report["sequences"] for piece in sequence["documents"]]
    assert {piece["dataset"] for piece in pieces} == {"web@2"}
    for piece in pieces:
        assert piece["properties"]["quality"] == pytest.approx(expected[piece["id"]], abs=1e-6)
    assert ADDED_SUFFIX == COLUMN_SUFFIX


def test_decoded_tokens_give_the_same_scores_as_the_parts(work: Path):
    from_parts = annotate(work, output=str(work / "from-parts"))
    shutil.rmtree(work / "clean")  # the processed parts are gone: the tokens are decoded
    from_tokens = annotate(work, output=str(work / "from-tokens"))
    assert from_parts.text["kind"] == "parts"
    assert from_tokens.text["kind"] == "tokens"
    assert "part-00000.parquet is gone" in from_tokens.text["reason"]
    assert column_values(from_tokens.column.folder) == column_values(from_parts.column.folder)
    manifest = json.loads((work / "from-tokens" / "_manifest.json").read_text())
    assert manifest["text"]["kind"] == "tokens"
    assert {Path(item["url"]).suffix for item in manifest["inputs"]} == {".bin"}
    # Same data, same scores: the catalog's latest version is already this one.
    assert from_tokens.version.ref == "web@2" and not from_tokens.created


def test_shards_grouped_by_a_property_get_their_own_documents(work: Path, built: Path):
    tokenize_dataset(
        {
            "input": str(work / "clean"),
            "output": str(work / "grouped"),
            "tokenizer": str(built / "tok.json"),
            "group_by": "kind",
            "shard_size_mb": 0.002,
        }
    )
    version = Catalog(work / "catalog.duckdb").register(str(work / "grouped"), "grouped")
    assert len(version.shards) > 4
    expected = expected_scores(work)
    for text in ("parts", "tokens"):
        folder = work / f"scored-from-{text}"
        result = annotate(work, dataset="grouped@1", text=text, output=str(folder))
        assert result.text["kind"] == text
        scores = {}
        for shard in version.shards:
            ids = pq.read_table(work / "grouped" / f"{shard.stem}.meta.parquet")["id"]
            values = pq.read_table(folder / f"{shard.stem}.parquet")["quality"]
            scores.update(zip(ids.to_pylist(), values.to_pylist(), strict=True))
        assert scores == expected


def test_changed_parts_are_not_read(work: Path):
    part = next((work / "clean").glob("part-*.parquet"))
    table = pq.read_table(part)
    pq.write_table(table.slice(1), part)  # one document fewer: no longer what was tokenized
    result = annotate(work)
    assert result.text["kind"] == "tokens" and "changed since" in result.text["reason"]
    with pytest.raises(ConfigError, match="cannot read the text from its parts"):
        annotate(work, text="parts", output=str(work / "other"))


def test_the_same_inputs_give_the_same_bytes_whatever_the_workers(work: Path):
    one = annotate(work, output=str(work / "one"), text="tokens")
    two = annotate(work, output=str(work / "two"), text="tokens", workers=2, batch_size=7)
    files = sorted(p.name for p in Path(one.column.folder).glob("*.parquet"))
    assert files == sorted(p.name for p in Path(two.column.folder).glob("*.parquet"))
    for name in files:
        assert (work / "one" / name).read_bytes() == (work / "two" / name).read_bytes()
    again = annotate(work, output=str(work / "one"), text="tokens")
    assert [f.hash for f in again.column.files] == [f.hash for f in one.column.files]


def test_refusals_name_the_problem_in_one_line(work: Path, cli):
    def refused(*args: str) -> str:
        code, _, err = cli("annotate", *args)
        assert code == 2
        line = " ".join(err.split())
        assert line.startswith("error:") and "Traceback" not in err
        return line

    base = ("--classifier", "models/quality")
    assert "no version 7" in refused("web@7", *base, "--as", "quality")
    assert "no dataset named 'wiki'" in refused("wiki@1", *base, "--as", "quality")
    assert "reserved column" in refused("web@1", *base, "--as", "n_tokens")
    assert "reserved column" in refused("web@1", *base, "--as", "Source")
    assert "not a column name" in refused("web@1", *base, "--as", "__mixplane_row")
    assert "not a column name" in refused("web@1", *base, "--as", "a b")
    assert "does not exist" in refused("web@1", "--classifier", "models/none", "--as", "q")
    annotate(work)
    assert "already has a column 'quality'" in refused("web@2", *base, "--as", "QUALITY")
    # A corrupt model file is refused before any work.
    model = work / "models" / "quality" / "model.bin"
    good = model.read_bytes()
    model.write_bytes(b"not a model")
    assert "does not match" in refused("web@2", *base, "--as", "other")
    model.write_bytes(good)
    # Neither the parts nor the token files: nothing to score.
    shutil.rmtree(work / "clean")
    next((work / "tokens").glob("shard-*.bin")).unlink()
    line = refused("web@1", "--classifier", str(work / "models" / "quality"), "--as", "q")
    assert "no text to score" in line and "is gone" in line
    assert len(list((work / "tokens" / "_columns").iterdir())) == 1  # nothing more written
    assert not any((work / "tokens" / "_columns").glob("q-*"))


def test_the_documented_commands_and_python_run_as_written(work: Path, cli):
    readme = readme_block("bash", "mixplane annotate")
    documented = readme_block("bash", "mixplane annotate", QUALITY_MD)
    for block in (readme, documented):
        for line in block.strip().splitlines():
            args = shlex.split(line, comments=True)
            assert args[0] == "mixplane"
            code, out, err = cli(*args[1:])
            assert code == 0, f"{line}: {err}"
        assert "lineage of web@2" in out and "annotate" in out
        # Run again as written: the same column on the same data is already web@2.
        assert Catalog(work / "catalog.duckdb").get("web").ref == "web@2"
    namespace: dict = {}
    exec(readme_block("python", "annotate_dataset", QUALITY_MD), namespace)
    assert namespace["result"].version.ref == "web@2" and not namespace["result"].created


def test_a_dataset_on_object_storage_is_annotated_in_place(work: Path, s3_bucket):
    import s3fs

    bucket, options = s3_bucket
    s3fs.S3FileSystem(**options).put(str(work / "tokens"), f"{bucket}/tokens", recursive=True)
    url = f"s3://{bucket}/tokens"
    catalog = Catalog(work / "catalog.duckdb", storage_options=options)
    catalog.register(url, "remote")
    result = annotate(work, dataset="remote@1", text="tokens", storage_options=options)
    assert result.version.ref == "remote@2"
    assert result.column.folder.startswith(f"{url}/_columns/quality-")
    expected = sum(1 for s in expected_scores(work).values() if s >= 0.5)
    assert catalog.select("quality >= 0.5", ["remote@2"]).documents == expected
    # With the machine's copy of the shards' metadata, the column is still read and checked.
    mirrored = Catalog(work / "catalog.duckdb", options, metadata_cache=str(work / "cache"))
    assert mirrored.select("quality >= 0.5", ["remote@2"]).documents == expected
    # A trace of a mixture over it shows the column, read from the bucket.
    mixture = {
        "catalog": str(work / "catalog.duckdb"),
        "storage_options": options,
        "cache_dir": str(work / "plans"),
        "seq_len": 16,
        "seed": 0,
        "components": {"all": {"where": "quality >= 0", "datasets": ["remote@2"]}},
    }
    (sequence,) = trace_step(mixture, index=3, properties=["quality"])["sequences"]
    scores = expected_scores(work)
    for piece in sequence["documents"]:
        assert (piece["dataset"], piece["folder"]) == ("remote@2", url)
        assert piece["properties"]["quality"] == pytest.approx(scores[piece["id"]], abs=1e-6)
    s3fs.S3FileSystem(**options).rm(next(iter(result.column.urls(result.version.stems))))
    with pytest.raises(MixplaneError, match="of its column 'quality' .* is missing"):
        Catalog(work / "catalog.duckdb", options, metadata_cache=str(work / "cache2")).select(
            "quality >= 0.5", ["remote@2"]
        )
