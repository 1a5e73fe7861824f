"""The data service's API against a real `mixplane serve` process on loopback, with answers
checked against the shards' metadata read directly (pyarrow), not through the service."""

from __future__ import annotations

import csv
import glob
import io
import json
import re
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import zstandard
from conftest import Service

from mixplane.catalog.composition import exact
from mixplane.load import MixtureDataset
from mixplane.load.tools.telemetry import JobReporter

MIXTURE = {
    "seq_len": 128,
    "seed": 3,
    "components": {
        "wiki": {"where": "source = 'wiki'", "weight": 0.6},
        "code": {"where": "source = 'code'", "weight": 0.4},
    },
}


def metadata(work: Path) -> pa.Table:
    files = sorted(glob.glob(str(work / "tokens" / "*.meta.parquet")))
    return pa.concat_tables(
        [pq.read_table(f, columns=["id", "n_tokens", "source", "language"]) for f in files]
    )


def test_datasets_and_versions(demo_service, demo_work):
    listed = demo_service.get("/api/datasets").json()
    assert [d["dataset"] for d in listed] == ["demo@1"]
    table = metadata(demo_work)
    assert listed[0]["documents"] == table.num_rows
    assert listed[0]["tokens"] == pc.sum(table["n_tokens"]).as_py()
    assert listed[0]["columns"]["language"] == "VARCHAR"
    assert demo_service.get("/api/datasets/demo").json()["versions"][0]["version"] == 1
    assert demo_service.get("/api/datasets/nothing").status_code == 404


def test_count_and_composition_match_the_metadata(demo_service, demo_work):
    table = metadata(demo_work)
    german = table.filter(pc.equal(table["language"], "de"))
    counted = demo_service.get("/api/count", where="language = 'de'").json()
    assert (counted["documents"], counted["tokens"]) == (
        german.num_rows,
        pc.sum(german["n_tokens"]).as_py(),
    )
    groups = demo_service.get("/api/composition", by="source").json()["groups"]
    expected = {}
    for source, tokens in zip(
        table["source"].to_pylist(), table["n_tokens"].to_pylist(), strict=True
    ):
        documents, total = expected.get(source, (0, 0))
        expected[source] = (documents + 1, total + tokens)
    assert {g["value"]: (g["documents"], g["tokens"]) for g in groups} == expected
    assert [g["tokens"] for g in groups] == sorted((g["tokens"] for g in groups), reverse=True)
    web = demo_service.get("/api/composition", by="language", where="source = 'web'").json()
    web_rows = table.filter(pc.equal(table["source"], "web"))
    assert web["documents"] == web_rows.num_rows
    assert {g["value"]: g["documents"] for g in web["groups"]} == dict(
        Counter(web_rows["language"].to_pylist())
    )


def test_numeric_columns_are_bucketed(demo_service, demo_work):
    files = sorted(glob.glob(str(demo_work / "tokens" / "*.meta.parquet")))
    values = pa.concat_tables([pq.read_table(f, columns=["n_tokens"]) for f in files])
    tokens = np.array(values["n_tokens"].to_pylist())
    answer = demo_service.get("/api/histogram", column="n_tokens", bins=7).json()
    edges = np.linspace(tokens.min(), tokens.max(), 8)
    counts, _ = np.histogram(tokens, bins=edges)
    assert [b["documents"] for b in answer["bins"]] == counts.tolist()
    assert sum(b["tokens"] for b in answer["bins"]) == int(tokens.sum())
    assert answer["bins"][0]["low"] == tokens.min() and answer["bins"][-1]["high"] == tokens.max()
    grouped = demo_service.get("/api/composition", by="n_tokens", bins=7).json()
    assert sum(g["documents"] for g in grouped["groups"]) == len(tokens)
    refused = demo_service.get("/api/histogram", column="source")
    assert refused.status_code == 400 and "not a number" in refused.json()["detail"]


def test_samples_and_a_document_back_to_its_raw_file(demo_service, demo_work):
    samples = demo_service.get("/api/samples", where="source = 'wiki'", k=3).json()["samples"]
    assert len(samples) == 3
    assert all(s["properties"]["source"] == "wiki" and s["text"] for s in samples)
    first = samples[0]
    document = demo_service.get(
        f"/api/documents/{first['dataset']}/{first['shard']}/{first['index']}"
    ).json()
    assert document["properties"]["id"] == first["properties"]["id"]
    assert document["text"].startswith(first["text"][:100])
    assert [step["kind"] for step in document["lineage"]] == ["tokenize", "process"]
    (origin,) = document["origin"]
    raw = Path(origin["input"]["url"])
    assert raw.is_relative_to(demo_work / "corpus" / "raw")
    with zstandard.open(raw, "rt") as handle:  # the wiki dumps are zstd JSON Lines
        ids = {json.loads(line)["id"] for line in handle}
    assert first["properties"]["id"] in ids


def test_lineage_and_runs_match_the_processing_statistics(demo_service, demo_work):
    lineage = demo_service.get("/api/lineage/demo@1").json()
    assert [s["kind"] for s in lineage["steps"]] == ["tokenize", "process"]
    assert lineage["raw_inputs"] and all(
        Path(item["url"]).is_relative_to(demo_work / "corpus") for item in lineage["raw_inputs"]
    )
    runs = demo_service.get("/api/runs").json()
    (process,) = [run for run in runs if run["kind"] == "process"]
    stats = json.loads((demo_work / "clean" / "_stats.json").read_text())
    assert (process["documents_in"], process["kept"], process["excluded"]) == (
        stats["documents_in"],
        stats["kept"],
        stats["excluded"],
    )
    details = demo_service.get(f"/api/runs/{process['id']}").json()
    assert details["excluded_by"] == stats["excluded_by"]
    assert details["datasets"] == ["demo@1"]
    assert demo_service.get("/api/runs/0000000000000000").status_code == 404


def test_mixture_preview(demo_service):
    body = {"mixture": MIXTURE, "steps": 100}
    report = demo_service.post("/api/mixtures/preview", body).json()
    shares = {c["name"]: (c["requested"], c["realized"]) for c in report["components"]}
    assert shares == {"wiki": (0.6, 0.6), "code": (0.4, 0.4)}
    # The first sequences, decoded with the tokenizer saved beside the demo's token shards.
    shown = demo_service.post("/api/mixtures/preview", body | {"show": 2}).json()["samples"]
    assert len(shown) == 2 and all(sample["text"].strip() for sample in shown)
    refused = demo_service.post("/api/mixtures/preview", {"mixture": {"seq_len": 8}, "steps": 5})
    assert refused.status_code == 400 and "components" in refused.json()["detail"]


def test_plans_from_the_service_are_the_local_resolution(demo_service, demo_work, tmp_path):
    catalog = str(demo_work / "catalog.duckdb")
    local = MixtureDataset(MIXTURE | {"catalog": catalog, "cache_dir": str(tmp_path / "local")})
    # Several ranks of one machine ask at once: one download, the same plan for all.
    served: list[MixtureDataset] = []
    threads = [
        threading.Thread(
            target=lambda: served.append(
                MixtureDataset(
                    MIXTURE | {"cache_dir": str(tmp_path / "ranks")}, plan_url=demo_service.url
                )
            )
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(served) == 4
    (folder,) = glob.glob(str(tmp_path / "ranks" / "plans" / "served-*"))
    names = sorted(Path(p).name for p in glob.glob(f"{folder}/*.npy") + [f"{folder}/plan.json"])
    assert names, "no plan files downloaded"
    for name in names:
        mine = Path(local.resolved.folder, name).read_bytes()
        assert Path(folder, name).read_bytes() == mine, name
    expected = [b["input_ids"] for _, b in zip(range(6), local.batches(4), strict=False)]
    for dataset in served:
        got = [b["input_ids"] for _, b in zip(range(6), dataset.batches(4), strict=False)]
        assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))


def test_a_mixture_the_service_refuses_is_a_clear_error(demo_service, tmp_path):
    from mixplane.errors import ConfigError

    bad = MIXTURE | {"components": {"x": {"where": "no_such_column = 1", "weight": 1.0}}}
    with pytest.raises(ConfigError, match="no_such_column"):
        MixtureDataset(bad | {"cache_dir": str(tmp_path)}, plan_url=demo_service.url)


def test_a_training_job_pushes_its_figures(demo_service, demo_work, tmp_path):
    catalog = str(demo_work / "catalog.duckdb")
    mixture = MIXTURE | {"catalog": catalog, "cache_dir": str(tmp_path), "global_batch_size": 4}
    dataset = MixtureDataset(mixture)
    reporter = JobReporter("api-test", dataset, url=demo_service.url, every=0.0)
    for step, _ in enumerate(reporter.watch(dataset.batches(4))):
        if step == 10:
            dataset.set_weights(step + 1, {"wiki": 0.25, "code": 0.75})
        if step == 30:
            break
    reporter.report()
    reporter.close()
    assert reporter.failures == 0, reporter.last_error
    samples = demo_service.get("/api/jobs/api-test/metrics").json()["samples"]
    assert [s["step"] for s in samples][:3] == [1, 2, 3]
    assert samples[0]["weights"] == {"wiki": 0.6, "code": 0.4}
    assert samples[-1]["weights"] == {"wiki": 0.25, "code": 0.75}
    assert all(s["sequences_per_second"] > 0 for s in samples[:-1])
    later = demo_service.get("/api/jobs/api-test/metrics", since=len(samples) - 2).json()
    assert later["samples"] == samples[-2:]
    jobs = {job["job"]: job for job in demo_service.get("/api/jobs").json()}
    assert jobs["api-test"]["samples"] == len(samples)
    exposition = demo_service.get("/metrics").text
    assert 'mixplane_job_weight{component="code",job="api-test"} 0.75' in exposition
    assert 'mixplane_http_requests_total{method="GET",route="/api/jobs",status="200"}' in (
        exposition
    )


def test_pushed_samples_are_validated(demo_service):
    bad = [
        {"weights": {"a": 0.5}},  # no step
        {"step": -1},
        {"step": 1, "weights": {"a": 2.0}},
        {"step": 1, "sequences_per_second": -3},
        {"step": 1, "extra": "field"},
    ]
    for body in bad:
        assert demo_service.post("/api/jobs/j/metrics", body).status_code == 422, body
    assert demo_service.post("/api/jobs/..%2Fx/metrics", {"step": 1}).status_code in (404, 422)


def test_the_readme_service_snippet_as_written(demo_service, demo_work, tmp_path, monkeypatch):
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    snippet = next(block for block in blocks if "JobReporter(" in block)
    snippet = snippet.replace("http://127.0.0.1:8000", demo_service.url)
    mixture = MIXTURE | {"max_epochs": 0.1, "cache_dir": str(tmp_path / "cache")}
    (tmp_path / "mixture.yaml").write_text(json.dumps(mixture))  # JSON is YAML
    monkeypatch.chdir(tmp_path)
    steps = []
    namespace = {"rank": 0, "world_size": 1, "train_step": steps.append}
    exec(snippet, namespace)
    assert len(steps) > 10
    assert glob.glob(str(tmp_path / "cache" / "plans" / "served-*" / "plan.json"))
    samples = demo_service.get("/api/jobs/run-7/metrics").json()["samples"]
    assert samples[-1]["step"] == len(steps)
    assert samples[-1]["weights"] == {"wiki": 0.6, "code": 0.4}


# --- The spec says what the service enforces -------------------------------------------------


@pytest.fixture(scope="module")
def spec(demo_service) -> dict:
    return demo_service.get("/openapi.json").json()


def validator(spec: dict, name: str):
    """A JSON Schema validator of the spec's component `name` (its references resolved)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator({"$ref": f"#/components/schemas/{name}", **spec})


def parameter(spec: dict, path: str, name: str, method: str = "get") -> dict:
    (found,) = [p for p in spec["paths"][path][method]["parameters"] if p["name"] == name]
    return found["schema"]


def test_an_empty_mixture_is_invalid_by_the_spec_as_by_the_service(demo_service, spec):
    for name, path in (
        ("PreviewRequest", "/api/mixtures/preview"),
        ("MixtureRequest", "/api/plans"),
    ):
        schema = validator(spec, name)
        assert not schema.is_valid({"mixture": {}})
        assert not schema.is_valid({"mixture": {"components": {"a": {"weight": 1}}}})  # seq_len
        assert schema.is_valid({"mixture": MIXTURE})
        refused = demo_service.post(path, {"mixture": {}})
        assert refused.status_code == 400 and "components" in refused.json()["detail"]
    # What the spec's validators refuse inside a mixture, the published schema refuses too.
    wiki = MIXTURE["components"]["wiki"]
    for refused_too in (
        MIXTURE | {"datasets": ["bad ref!"]},
        MIXTURE | {"datasets": []},
        MIXTURE | {"datasets": ["demo@1" + "0" * 18]},
        MIXTURE | {"components": {"wiki": wiki | {"datasets": ["demo@0"]}}},
        MIXTURE | {"components": {"wiki": wiki | {"where": " "}}},
    ):
        assert not validator(spec, "MixtureRequest").is_valid({"mixture": refused_too})
        answer = demo_service.post("/api/plans", {"mixture": refused_too})
        assert answer.status_code in (400, 422), answer.text
    image_text = {"kind": "image_text", "components": {"a": {"weight": 1}}}
    assert validator(spec, "MixtureRequest").is_valid({"mixture": image_text})
    assert not validator(spec, "MixtureRequest").is_valid({"mixture": image_text | {"seq_len": 8}})
    # Remote image shards take a limit and both cache modes, as token shards do.
    for mode in ("shards", "ranges"):
        assert validator(spec, "MixtureRequest").is_valid(
            {"mixture": image_text | {"cache": mode, "cache_limit": "1GB"}}
        )


def test_dataset_references_columns_and_names_have_their_patterns(demo_service, spec):
    datasets = parameter(spec, "/api/count", "datasets")["anyOf"][0]["items"]["pattern"]
    for good in ("demo", "demo@1", "demo@1,other@12"):
        assert re.search(datasets, good), good
        assert demo_service.get("/api/count", datasets=good).status_code in (200, 400), good
    for bad in ("demo@", "demo@0", "demo@x", "../demo", "demo, other", ""):
        assert not re.search(datasets, bad), bad
        assert demo_service.get("/api/count", datasets=bad).status_code == 422, bad
    dataset = parameter(spec, "/api/documents/{dataset}/{shard}/{index}", "dataset")["pattern"]
    assert re.search(dataset, "demo@1") and not re.search(dataset, "demo@1,demo@2")
    for path, name in (("/api/composition", "by"), ("/api/histogram", "column")):
        column = parameter(spec, path, name)["pattern"]
        assert not re.search(column, "") and not re.search(column, "a\nb")
        assert demo_service.get(path, **{name: ""}).status_code == 422
        assert demo_service.get(path, **{name: "n_tokens"}).status_code == 200


def test_job_metrics_take_numbers_not_booleans(demo_service, spec):
    schema = validator(spec, "MetricSample")
    refused = [
        {"step": True},
        {"step": 1, "sequences_per_second": True},
        {"step": 1, "weights": {"a": False}},
        {"step": 1, "cache": {"hits": True}},
        {"step": "3"},
        {"step": 1, "weights": {"a b": 0.5}},
    ]
    for body in refused:
        assert not schema.is_valid(body), body
        assert demo_service.post("/api/jobs/strict/metrics", body).status_code == 422, body
    for body in ({"step": 2.0, "cache": {"hits": 3.0}}, {"step": 3, "tokens_per_second": 10}):
        assert schema.is_valid(body)
        assert demo_service.post("/api/jobs/strict/metrics", body).status_code == 200, body
    steps = [s["step"] for s in demo_service.get("/api/jobs/strict/metrics").json()["samples"]]
    assert steps == [2, 3] and all(type(step) is int for step in steps)


def test_a_method_not_allowed_names_every_allowed_one(demo_service):
    import httpx

    for method, path, allowed in (
        ("DELETE", "/api/jobs/j/metrics", {"GET", "POST"}),
        ("PUT", "/api/plans", {"POST"}),
        ("POST", "/api/datasets", {"GET"}),
    ):
        answer = httpx.request(method, demo_service.url + path)
        assert answer.status_code == 405, (method, path)
        assert set(answer.headers["allow"].split(", ")) == allowed, (method, path)


# --- Pages, exports, log scale and thumbnails ------------------------------------------------


@pytest.fixture(scope="module")
def site_service(site_work, tmp_path_factory):
    """`mixplane serve` over the demo's datasets and the image dataset `images`."""
    cache = tmp_path_factory.mktemp("site-cache")
    service = Service(site_work / "catalog.duckdb", "--cache-dir", str(cache))
    yield service
    service.stop()


def test_samples_come_in_pages_in_catalog_order(site_service, site_work):
    from mixplane.catalog import Catalog

    version = Catalog(site_work / "catalog.duckdb").get("demo@1")
    expected = []
    for shard in version.shards:
        table = pq.read_table(
            f"{version.uri}/{shard.stem}.meta.parquet", columns=["id", "language"]
        )
        expected += [row["id"] for row in table.to_pylist() if row["language"] == "de"]
    assert len(expected) > 20
    found, offset = [], 0
    while True:
        page = site_service.get(
            "/api/samples", where="language = 'de'", datasets="demo@1", k=17, offset=offset
        ).json()
        assert page["total"] == len(expected) and page["offset"] == offset
        if not page["samples"]:
            break
        assert len(page["samples"]) == min(17, len(expected) - offset)
        found += [sample["properties"]["id"] for sample in page["samples"]]
        offset += 17
    assert found == expected
    # Across datasets: the demo's documents, then the images (their captions as text).
    both = site_service.get("/api/samples", k=4, offset=version.documents - 2).json()
    assert [s["dataset"] for s in both["samples"]] == ["demo@1"] * 2 + ["images@1"] * 2
    assert both["total"] == version.documents + 12
    assert both["samples"][2]["text"] == both["samples"][2]["properties"]["caption"]


def test_a_composition_and_a_page_export_as_csv(site_service):
    params = {"by": "n_tokens", "datasets": "demo", "bins": 6, "scale": "log"}
    answer = site_service.get("/api/composition", **params).json()
    exported = site_service.get("/api/composition", **params, format="csv")
    assert exported.headers["content-type"].startswith("text/csv")
    assert (
        exported.headers["content-disposition"] == 'attachment; filename="composition-n_tokens.csv"'
    )
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert [(r["value"], int(r["documents"]), int(r["tokens"])) for r in rows] == [
        (g["value"], g["documents"], g["tokens"]) for g in answer["groups"]
    ]
    assert (
        rows[-1]["value"].endswith("]") and float(rows[-1]["high"]) == answer["groups"][-1]["high"]
    )

    page = site_service.get("/api/samples", where="language = 'de'", k=5, offset=5).json()
    exported = site_service.get(
        "/api/samples", where="language = 'de'", k=5, offset=5, format="csv"
    )
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert len(rows) == 5
    for row, sample in zip(rows, page["samples"], strict=True):
        assert (row["dataset"], row["shard"], int(row["index"])) == (
            sample["dataset"],
            sample["shard"],
            sample["index"],
        )
        assert row["text"] == sample["text"] and row["id"] == sample["properties"]["id"]


def test_exported_cells_cannot_run_as_formulas():
    from mixplane.serve.exports import samples_csv

    page = {
        "samples": [
            {
                "dataset": "d@1",
                "shard": "s",
                "index": 0,
                "text": '=HYPERLINK("http://x")',
                "truncated": False,
                "properties": {"score": -1.5, "tags": ["a", "b"], "note": "+1", "text": "x"},
            }
        ]
    }
    (row,) = csv.DictReader(io.StringIO(samples_csv(page)))
    assert row["text"] == '\'=HYPERLINK("http://x")' and row["note"] == "'+1"
    assert row["score"] == "-1.5" and row["tags"] == '["a","b"]' and row["properties.text"] == "x"


def test_numeric_buckets_are_labelled_as_they_hold(site_service, demo_work):
    table = metadata(demo_work)
    values = table["n_tokens"].to_pylist()
    answer = site_service.get("/api/composition", by="n_tokens", datasets="demo", bins=7).json()
    *inner, last = answer["groups"]
    assert last["value"] == f"[{exact(last['low'])}, {exact(last['high'])}]"
    assert last["high"] == max(values)
    assert all(g["value"] == f"[{exact(g['low'])}, {exact(g['high'])})" for g in inner)
    for group in answer["groups"]:
        closed = group is last
        inside = [
            v
            for v in values
            if group["low"] <= v and (v <= group["high"] if closed else v < group["high"])
        ]
        assert group["documents"] == len(inside)
    logged = site_service.get(
        "/api/histogram", column="n_tokens", datasets="demo", scale="log"
    ).json()
    assert logged["scale"] == "log" and logged["nonpositive"] == {"documents": 0, "tokens": 0}
    widths = [np.log10(b["high"]) - np.log10(b["low"]) for b in logged["bins"]]
    assert np.allclose(widths, widths[0], rtol=0.02)  # edges rounded to 3 digits of a width


def test_image_samples_have_bounded_thumbnails(site_service):
    from io import BytesIO

    from PIL import Image

    page = site_service.get("/api/samples", datasets="images", k=12).json()["samples"]
    assert len(page) == 12
    for sample in page:
        answer = site_service.get(sample["thumbnail"], size=64)
        assert answer.status_code == 200, answer.text
        picture = Image.open(BytesIO(answer.content))
        assert max(picture.size) <= 64
        number = int(sample["properties"]["id"][4:])
        assert answer.headers["content-type"] == ("image/png" if number == 3 else "image/jpeg")
        assert picture.mode == ("RGBA" if number == 3 else "RGB")
    large = next(s for s in page if s["properties"]["id"] == "pic-11")
    assert Image.open(BytesIO(site_service.get(large["thumbnail"]).content)).size == (256, 171)
    text = site_service.get("/api/samples", datasets="demo", k=1).json()["samples"][0]
    assert text["thumbnail"] is None
    document = site_service.get(f"/api/documents/images@1/{large['shard']}/{large['index']}")
    assert document.json()["thumbnail"] == large["thumbnail"]


@pytest.mark.parametrize(
    "path",
    [
        "/api/thumbnails/demo@1/shard-00000-000/0",  # no images there
        "/api/thumbnails/images@1/part-99999/0",
        "/api/thumbnails/images@1/..%2F..%2Fcatalog/0",
        "/api/thumbnails/images@1/%2Fetc%2Fpasswd/0",
        "/api/thumbnails/images@1/part-00000/12",
        "/api/thumbnails/images@1/part-00000/-1",
        "/api/thumbnails/images@9/part-00000/0",
        "/api/thumbnails/..%2Fimages/part-00000/0",
        "/api/thumbnails/images@1/part-00000/0?size=4096",
        "/api/thumbnails/images@1/part-00000/0?size=0",
    ],
)
def test_thumbnail_paths_are_checked_against_the_catalog(site_service, path):
    path, _, query = path.partition("?")
    answer = site_service.get(path, **dict(part.split("=") for part in query.split("&") if part))
    assert answer.status_code in (404, 422), (path, answer.status_code)
    assert answer.headers["content-type"] == "application/json"


def test_thumbnails_refuse_what_they_cannot_make_small(site_work, monkeypatch):
    """An image whose header claims a huge size is refused before it is decoded (a
    decompression bomb), bytes that are no image and oversized samples are refused by name."""
    import struct
    import zlib
    from io import BytesIO

    from PIL import Image

    from mixplane.serve import thumbnails

    def claiming(width: int, height: int) -> bytes:
        """A one-pixel PNG whose header says `width` x `height`."""
        buffer = BytesIO()
        Image.new("RGB", (1, 1)).save(buffer, "PNG")
        png = bytearray(buffer.getvalue())
        png[16:24] = struct.pack(">II", width, height)  # IHDR width and height
        png[29:33] = struct.pack(">I", zlib.crc32(bytes(png[12:29])))
        return bytes(png)

    with pytest.raises(thumbnails.NoThumbnail, match="9000 x 9000 pixels; previews are made"):
        thumbnails.thumbnail(claiming(9000, 9000), 64)
    with pytest.raises(thumbnails.NoThumbnail, match="decompression bomb"):
        thumbnails.thumbnail(claiming(100_000, 100_000), 64)
    with pytest.raises(thumbnails.NoThumbnail, match="cannot be read"):
        thumbnails.thumbnail(b"<html>not an image</html>", 64)
    monkeypatch.setattr(thumbnails, "MAX_SAMPLE_BYTES", 512)
    with pytest.raises(thumbnails.NoThumbnail, match="previews are made of samples up to 512"):
        thumbnails.sample_image(str(site_work / "images"), "part-00000", 0)
