"""fastText quality classifiers: training, the model folder, and the `classify` stage."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import child_env, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st
from readme_blocks import readme_block

from mixplane.classify import load_classifier, train_fasttext
from mixplane.classify.metrics import auc, binary_metrics
from mixplane.errors import ConfigError
from mixplane.manifest import read_json
from mixplane.process.pipeline import Pipeline, run_pipeline
from mixplane.stages.classify.text import fasttext_text
from mixplane.stages.classify.top import keep_count, top_mask
from mixplane.synth.languages import LANGUAGES
from mixplane.synth.prose import encyclopedia_article

SPAM = ("cheap", "best", "buy", "discount", "free", "deal", "click", "offer", "now", "casino")
# Small fastText settings: a model of about 1 MB trained in a fraction of a second.
SMALL = {"dim": 16, "bucket": 20000, "epoch": 5}


def good_text(number: int) -> str:
    return encyclopedia_article(LANGUAGES["en"], random.Random(number), sentences=4)[1]


def spam_text(number: int) -> str:
    rng = random.Random(10_000 + number)
    return " ".join(rng.choice(SPAM) for _ in range(rng.randint(8, 30)))


def write_corpus(root: Path, n: int = 120) -> Path:
    """`wiki/` holds prose; `web/` holds spam and some prose. Each web text appears twice
    (different ids), so scores tie."""
    write_jsonl(
        root / "wiki" / "a.jsonl", [{"id": f"w{i}", "text": good_text(i)} for i in range(n)]
    )
    web = []
    for i in range(n // 2):
        text = good_text(5000 + i) if i % 4 == 0 else spam_text(i)
        web += [{"id": f"b{i}", "text": text}, {"id": f"c{i}", "text": text}]
    write_jsonl(root / "web" / "a.jsonl", web[: n // 2])
    write_jsonl(root / "web" / "b.jsonl", web[n // 2 :])
    return root


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="module")
def model(corpus: Path) -> Path:
    folder = corpus.parent / "model"
    train_fasttext(
        {"output": str(folder), "positive": str(corpus / "wiki"), "negative": str(corpus / "web")},
        **SMALL,
    )
    return folder


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def kept_rows(output: Path) -> list[dict]:
    parts = sorted(output.glob("part-*.parquet"))
    return pa.concat_tables([pq.read_table(p) for p in parts]).to_pylist() if parts else []


# --- training -----------------------------------------------------------------------------


def test_training_is_deterministic_for_a_seed(corpus: Path, model: Path, tmp_path: Path):
    config = {"positive": str(corpus / "wiki"), "negative": str(corpus / "web"), **SMALL}
    again = train_fasttext({**config, "output": str(tmp_path / "again")})
    other = train_fasttext({**config, "output": str(tmp_path / "other"), "seed": 1})
    assert sha256(tmp_path / "again" / "model.bin") == sha256(model / "model.bin")
    assert again.description["model_sha256"] == sha256(model / "model.bin")
    assert other.description["model_sha256"] != again.description["model_sha256"]


def test_metrics_and_provenance_are_stored_with_the_model(corpus: Path, model: Path):
    description = json.loads((model / "classifier.json").read_text())
    data = description["data"]
    # Balanced: the web pool (120 documents) and the wiki pool (120) give 120 each.
    assert data["per_class"] == 120 and data["held_out_per_class"] == 12
    assert data["train_per_class"] == 108
    metrics = description["metrics"]
    assert metrics["examples"] == 24
    counts = ("true_positives", "false_positives", "false_negatives", "true_negatives")
    assert sum(metrics[name] for name in counts) == 24
    # A quarter of the web documents are prose too: well above chance, not perfect.
    assert metrics["auc"] > 0.7
    assert description["labels"] == ["hq", "lq"] and description["positive_label"] == "hq"
    assert description["training"]["seed"] == 0 and description["training"]["dim"] == 16
    assert description["versions"]["mixplane"]
    assert description["model_sha256"] == sha256(model / "model.bin")


def test_the_smaller_class_and_max_per_class_set_the_sample(corpus: Path, tmp_path: Path):
    write_jsonl(tmp_path / "few" / "a.jsonl", [{"text": good_text(i)} for i in range(30)])
    config = {"positive": str(tmp_path / "few"), "negative": str(corpus / "web"), **SMALL}
    few = train_fasttext({**config, "output": str(tmp_path / "m1"), "holdout": 0.2})
    assert few.description["data"]["per_class"] == 30
    assert few.description["data"]["held_out_per_class"] == 6
    capped = train_fasttext({**config, "output": str(tmp_path / "m2"), "max_per_class": 10})
    assert capped.description["data"]["per_class"] == 10


def test_a_catalog_selection_gives_the_examples(tmp_path: Path, cli):
    from mixplane.catalog import Catalog
    from mixplane.tokenize import tokenize_dataset, train_tokenizer

    root = write_corpus(tmp_path / "raw", 60)
    clean = str(tmp_path / "clean")
    run_pipeline({"input": str(root / "*" / "*.jsonl"), "output": clean})
    train_tokenizer(clean, vocab_size=400, out=str(tmp_path / "tokenizer.json"))
    tokenizer = str(tmp_path / "tokenizer.json")
    tokenize_dataset({"input": clean, "output": str(tmp_path / "tokens"), "tokenizer": tokenizer})
    Catalog(str(tmp_path / "c.duckdb")).register(str(tmp_path / "tokens"), name="corpus")
    result = train_fasttext(
        {
            "output": str(tmp_path / "model"),
            "catalog": str(tmp_path / "c.duckdb"),
            "positive": "source = 'wiki'",
            "negative": "source = 'web'",
            **SMALL,
        }
    )
    data = result.description["data"]
    # The command as a user types it trains the same model, byte for byte.
    args = ["classifier", "train", "-o", str(tmp_path / "typed"), "--catalog"]
    args += [str(tmp_path / "c.duckdb"), "--positive", "source = 'wiki'"]
    args += ["--negative", "source = 'web'", "--dim", "16", "--bucket", "20000"]
    code, out, err = cli(*args)
    assert code == 0, err
    assert sha256(tmp_path / "typed" / "model.bin") == result.description["model_sha256"]
    assert data["positive"]["where"] == "source = 'wiki'"
    assert data["positive"]["datasets"] == ["corpus@1"]
    assert data["per_class"] == 60
    assert result.metrics["auc"] > 0.7


def test_preprocessing_is_one_lowercased_line_split_by_fasttext(model: Path):
    assert fasttext_text("Hello,\n\tWorld\u00a0 Again ") == "hello, \tworld\u00a0 again "
    assert fasttext_text("A\r\nB", lowercase=False) == "A\r B"
    classifier = load_classifier(model)
    # fastText's own word splitting: whitespace runs, tabs and line ends count as one space.
    same = classifier.scores(["Alpha beta\n\ngamma", "alpha\tbeta  gamma\r\n"], "hq")
    assert same[0] == same[1]
    # A lone surrogate is scored as "?", not refused.
    odd = classifier.scores(["alpha \udc80 beta", "alpha ? beta"], "hq")
    assert odd[0] == odd[1]


# --- the model folder ---------------------------------------------------------------------


def test_a_missing_or_corrupt_model_folder_is_a_clear_error(model: Path, tmp_path: Path):
    with pytest.raises(ConfigError, match="does not exist or is not a folder"):
        load_classifier(tmp_path / "nowhere")
    broken = tmp_path / "broken"
    broken.mkdir()
    with pytest.raises(ConfigError, match=r"classifier\.json: missing"):
        load_classifier(broken)
    (broken / "classifier.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"classifier\.json: not valid JSON"):
        load_classifier(broken)
    (broken / "classifier.json").write_text((model / "classifier.json").read_text())
    with pytest.raises(ConfigError, match=r"model\.bin: missing"):
        load_classifier(broken)
    data = bytearray((model / "model.bin").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (broken / "model.bin").write_bytes(bytes(data))
    with pytest.raises(ConfigError, match=r"model\.bin: content hash .* does not match"):
        load_classifier(broken)
    # ... and a pipeline naming it fails when it is built, before any work, with that line.
    config = {"input": "x.jsonl", "output": str(tmp_path / "o")}
    with pytest.raises(ConfigError, match=r"model\.bin: content hash"):
        Pipeline(_parse({**config, "stages": [{"classify": {"model": str(broken)}}]}))


def _parse(data: dict):
    from mixplane.process.config import PipelineConfig

    return PipelineConfig.parse(data)


def test_a_model_trained_elsewhere_is_imported_from_the_command_line(
    corpus: Path, model: Path, tmp_path: Path, cli
):
    # A plain fastText file, as another tool would leave it.
    (tmp_path / "elsewhere.bin").write_bytes((model / "model.bin").read_bytes())
    folder = tmp_path / "imported"
    args = ["classifier", "import", str(tmp_path / "elsewhere.bin"), "-o", str(folder)]
    code, out, err = cli(*args, "--positive-label", "nope")
    assert code == 2 and "has no label 'nope'; its labels: " in err
    code, out, err = cli(*args, "--positive-label", "hq", "--lowercase")
    assert code == 0, err
    description = json.loads((folder / "classifier.json").read_text())
    assert sorted(description["labels"]) == ["hq", "lq"] and description["metrics"] is None
    assert description["model_sha256"] == sha256(model / "model.bin")
    texts = [good_text(1), spam_text(1)]
    imported = load_classifier(folder).scores(texts, "hq")
    assert imported.tolist() == load_classifier(model).scores(texts, "hq").tolist()


def test_stage_options_are_checked_when_the_pipeline_is_built(model: Path, tmp_path: Path):
    base = {"input": "x.jsonl", "output": str(tmp_path / "o")}
    bad = [
        ({"mode": "filter"}, "needs one of threshold or keep_top"),
        ({"mode": "filter", "threshold": 0.5, "keep_top": 0.1}, "needs one of"),
        ({"threshold": 0.5}, "need mode: filter"),
        ({"label": "nope"}, "has no label 'nope'; its labels: hq, lq"),
        ({"as": "text"}, "'as' cannot be 'text', a document column"),
    ]
    for options, message in bad:
        stages = [{"classify": {"model": str(model), **options}}]
        with pytest.raises(ConfigError, match=message):
            Pipeline(_parse({**base, "stages": stages}))


# --- the stage in a pipeline --------------------------------------------------------------


def test_annotate_keeps_all_and_filter_drops_below_the_threshold(
    corpus: Path, model: Path, tmp_path: Path
):
    inputs = str(corpus / "*" / "*.jsonl")
    stage = {"model": str(model), "as": "q"}
    annotated = run_pipeline(
        {"input": inputs, "output": str(tmp_path / "a"), "stages": [{"classify": stage}]}
    )
    filtered = run_pipeline(
        {
            "input": inputs,
            "output": str(tmp_path / "f"),
            "stages": [{"classify": {**stage, "mode": "filter", "threshold": 0.5}}],
        }
    )
    rows = kept_rows(tmp_path / "a")
    assert annotated.stats["kept"] == len(rows) == 240
    scores = {row["id"]: row["q"] for row in rows}
    # The stage's scores are the model's, on the documents' preprocessed text.
    direct = load_classifier(model).scores([row["text"] for row in rows], "hq")
    assert [scores[row["id"]] for row in rows] == direct.tolist()
    above = {doc_id for doc_id, score in scores.items() if score >= 0.5}
    assert 0 < len(above) < 240
    assert {row["id"] for row in kept_rows(tmp_path / "f")} == above
    assert filtered.stats["excluded_by"]["classify"]["below_threshold"] == 240 - len(above)


def test_keep_top_keeps_exactly_the_fraction_on_any_number_of_workers(
    corpus: Path, model: Path, tmp_path: Path
):
    inputs = str(corpus / "*" / "*.jsonl")
    annotate = {"classify": {"model": str(model)}}
    run_pipeline({"input": inputs, "output": str(tmp_path / "a"), "stages": [annotate]})
    rows = kept_rows(tmp_path / "a")
    ids = [row["id"] for row in rows]
    scores = np.array([row["quality_score"] for row in rows], dtype=np.float32)
    top = {"classify": {"model": str(model), "mode": "filter", "keep_top": 0.3}}
    outputs = {}
    for workers in (1, 2):
        out = tmp_path / f"top{workers}"
        result = run_pipeline(
            {"input": inputs, "output": str(out), "stages": [top], "workers": workers}
        )
        assert result.stats["kept"] == keep_count(0.3, 240) == 72
        merge = result.stats["merges"]["classify"]
        assert merge["documents"] == 240 and merge["kept"] == 72
        outputs[workers] = [(p.name, sha256(p)) for p in sorted(out.glob("part-*.parquet"))]
        kept = {row["id"] for row in kept_rows(out)}
        # The best 72 by score, equal scores by id.
        best = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))[:72]
        assert kept == {ids[i] for i in best}
    # Ties at the cutoff are decided by id: the rule had to choose among equal scores.
    assert merge["tied_at_cutoff"] > 1
    assert outputs[1] == outputs[2]


def test_the_models_hash_is_in_the_manifest_and_the_config_hash(
    corpus: Path, model: Path, tmp_path: Path
):
    copy = tmp_path / "model"
    copy.mkdir()
    for name in ("model.bin", "classifier.json"):
        (copy / name).write_bytes((model / name).read_bytes())
    config = {
        "input": str(corpus / "wiki" / "*.jsonl"),
        "output": str(tmp_path / "o"),
        "stages": [{"classify": {"model": str(copy)}}],
    }
    first = run_pipeline(config)
    manifest = read_json(first.manifest)
    assert manifest["stages"] == [
        {"name": "classify", "model": str(copy), "model_sha256": sha256(model / "model.bin")}
    ]
    # Another model in the same folder is other outputs: the rerun redoes the work.
    train_fasttext(
        {
            "output": str(tmp_path / "m2"),
            "positive": str(corpus / "wiki"),
            "negative": str(corpus / "web"),
            "seed": 5,
            **SMALL,
        }
    )
    for name in ("model.bin", "classifier.json"):
        (copy / name).write_bytes((tmp_path / "m2" / name).read_bytes())
    second = run_pipeline(config)
    assert second.stats["skipped_tasks"] == 0
    assert read_json(second.manifest)["config_hash"] != manifest["config_hash"]
    assert read_json(second.manifest)["stages"][0]["model_sha256"] == sha256(
        tmp_path / "m2" / "model.bin"
    )


# --- the threshold and metric math --------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.75, 1.0000100136]), min_size=0, max_size=60),
    st.floats(0.0, 1.0),
)
def test_top_mask_keeps_exactly_the_rounded_fraction_best_first(values, fraction):
    scores = np.array(values, dtype=np.float32)
    ids = [f"d{(i * 7) % 11:02d}-{i}" for i in range(len(values))]
    mask = top_mask(scores, ids, fraction)
    kept = keep_count(fraction, len(values))
    assert mask.sum() == kept
    assert abs(kept - fraction * len(values)) <= 0.5 + 1e-9  # the fraction, rounded
    # The kept ones are the first by (score descending, id ascending).
    order = sorted(range(len(values)), key=lambda i: (-float(scores[i]), ids[i], i))
    assert set(np.flatnonzero(mask).tolist()) == set(order[: int(mask.sum())])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from([0.0, 0.2, 0.5, 0.9])), max_size=40))
def test_auc_is_the_share_of_correctly_ordered_pairs(pairs):
    truth = np.array([t for t, _ in pairs], dtype=bool)
    scores = np.array([s for _, s in pairs])
    positives, negatives = scores[truth], scores[~truth]
    if not len(positives) or not len(negatives):
        assert auc(truth, scores) is None
        return
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    assert auc(truth, scores) == pytest.approx(wins / (len(positives) * len(negatives)))


def test_binary_metrics_by_hand():
    metrics = binary_metrics(np.array([1, 1, 1, 0, 0]), np.array([0.9, 0.6, 0.2, 0.7, 0.1]))
    assert metrics["precision"] == pytest.approx(2 / 3)
    assert metrics["recall"] == pytest.approx(2 / 3)
    assert metrics["f1"] == pytest.approx(2 / 3)
    assert metrics["accuracy"] == pytest.approx(3 / 5)
    assert metrics["auc"] == pytest.approx(4 / 6)  # 4 of the 6 pairs in order


# --- the command line and the README ------------------------------------------------------


def test_the_cli_trains_prints_metrics_and_refuses_an_existing_folder(
    corpus: Path, tmp_path: Path, cli
):
    args = ["classifier", "train", "-o", str(tmp_path / "m"), "--positive", str(corpus / "wiki")]
    args += ["--negative", str(corpus / "web"), "--dim", "16", "--bucket", "20000"]
    code, out, err = cli(*args)
    assert code == 0, err
    assert "108 examples per class, 12 held out" in out
    assert "auc" in out and "precision" in out
    code, out, err = cli(*args, "--json")
    assert code == 2 and "already exists; choose a new folder" in err
    code, out, err = cli("classifier", "train", "-o", str(tmp_path / "x"), "--positive", "a")
    assert code == 2 and "give a training YAML, or --output, --positive and --negative" in err


def run_in(folder: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=folder, env=child_env(), capture_output=True, text=True, timeout=300
    )


def test_readme_quality_classifier_blocks_run_as_written(tmp_path: Path):
    write_corpus(tmp_path / "raw")
    for name in ("wiki", "web"):
        rows = [
            json.loads(line)
            for f in sorted((tmp_path / "raw" / name).glob("*.jsonl"))
            for line in f.read_text().splitlines()
        ]
        (tmp_path / "clean" / name).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / "clean" / name / "part-00000.parquet")
    train = readme_block("bash", "mixplane classifier train")
    done = run_in(
        tmp_path, "bash", "-c", train.replace("mixplane ", f"{sys.executable} -m mixplane ", 1)
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "models" / "quality" / "classifier.json").exists()
    (tmp_path / "pipeline.yaml").write_text(readme_block("yaml", "classify: {model:"))
    done = run_in(tmp_path, sys.executable, "-m", "mixplane", "process", "pipeline.yaml", "--json")
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)["stats"]
    assert stats["documents_in"] == 120 and stats["kept"] == 12
