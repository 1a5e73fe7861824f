"""`POST /api/mixtures/trace` on a real `mixplane serve`: the Python API's answer, and
requests an attacker would send (no token, huge or negative steps, wrong types, too many
sequences, names that are not columns) refused with a clear status."""

from __future__ import annotations

import httpx
import pytest
from conftest import Service
from mixtures import demo_mixture

from mixplane.lineage import Origins
from mixplane.load.tools.trace import trace

TOKEN = "trace-token-for-tests-only"
MIXTURE = demo_mixture()
PATH = "/api/mixtures/trace"


@pytest.fixture(scope="module")
def guarded(demo_work, tmp_path_factory):
    cache = tmp_path_factory.mktemp("trace-service-cache")
    service = Service(demo_work / "catalog.duckdb", "--cache-dir", str(cache), token=TOKEN)
    yield service
    service.stop()


def test_the_service_traces_as_the_python_api(guarded, demo_work, tmp_path):
    body = {
        "mixture": MIXTURE,
        "step": 3,
        "rank": 1,
        "world_size": 2,
        "batch_size": 4,
        "properties": ["language", "n_tokens"],
    }
    answer = guarded.post(PATH, body)
    assert answer.status_code == 200, answer.text
    local = MIXTURE | {"catalog": str(demo_work / "catalog.duckdb"), "cache_dir": str(tmp_path)}
    request = {key: value for key, value in body.items() if key != "mixture"}
    expected = trace(local, request)
    got = answer.json()
    assert got["positions"] == expected["positions"] == [25, 27, 29, 31]
    assert got["sequences"] == [
        {**s, "documents": [d | {"origin": None} for d in s["documents"]]}
        for s in expected["sequences"]
    ]
    assert all(d["dataset"] == "demo@1" for s in got["sequences"] for d in s["documents"])
    one = guarded.post(
        PATH, {"mixture": MIXTURE, "index": 27, "properties": ["language", "n_tokens"]}
    )
    one = one.json()
    assert one["sequences"][0]["documents"] == got["sequences"][1]["documents"]


def test_requests_without_the_token_are_refused(guarded):
    body = {"mixture": MIXTURE, "index": 0}
    assert httpx.post(guarded.url + PATH, json=body).status_code == 401
    wrong = {"Authorization": "Bearer " + "x" * len(TOKEN)}
    assert httpx.post(guarded.url + PATH, json=body, headers=wrong).status_code == 401


@pytest.mark.parametrize(
    "fields",
    [
        {"step": -1, "batch_size": 1},
        {"step": 2**63, "batch_size": 1},
        {"step": 10**40, "batch_size": 1},
        {"index": -5},
        {"step": "3", "batch_size": 1},
        {"step": True, "batch_size": 1},
        {"step": 2.5, "batch_size": 1},
        {"step": [1], "batch_size": 1},
        {"step": 1, "index": 1, "batch_size": 1},
        {},
        {"step": 1, "batch_size": 0},
        {"step": 1, "rank": 2, "world_size": 2, "batch_size": 1},
        {"step": 1, "world_size": 0, "batch_size": 1},
        {"step": 1, "batch_size": 1, "max_sequences": 10**6},
        {"index": 1, "properties": ["a\nb"]},
        {"index": 1, "properties": ["x"] * 65},
        {"index": 1, "weight_log": [{"step": -1, "weights": {"wiki": 0.5}}]},
        {"index": 1, "weight_log": [{"step": 1, "weights": {"wiki": 2}}]},
        {"index": 1, "weight_log": "weights.jsonl"},
        {"index": 1, "catalog_path": "/etc/passwd"},
    ],
)
def test_malformed_requests_are_refused_by_their_shape(guarded, fields):
    answer = guarded.post(PATH, {"mixture": MIXTURE} | fields)
    assert answer.status_code == 422, answer.text
    assert len(answer.text) < 5000  # the problems named, the input not echoed


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"step": 3}, "pass batch_size"),
        ({"step": 2**36, "batch_size": 8}, "past any stream"),
        ({"step": 0, "batch_size": 1024, "world_size": 1, "max_sequences": 16}, "max_sequences"),
        ({"index": 0, "properties": ["no_such_column"]}, "has no column 'no_such_column'"),
        ({"mixture": MIXTURE | {"global_batch_size": 10}, "step": 1, "world_size": 4}, "multiple"),
        ({"mixture": {"seq_len": 8}, "index": 0}, "components"),
        (
            {
                "mixture": MIXTURE
                | {"global_batch_size": 4, "policy": {"name": "static", "update_every": 2}},
                "step": 100,
            },
            "give the run's weight log",
        ),
        (
            {
                "mixture": MIXTURE
                | {"global_batch_size": 4, "policy": {"name": "my.module:Policy"}},
                "step": 0,
            },
            "my.module:Policy",
        ),
    ],
)
def test_requests_the_mixture_cannot_answer_say_why(guarded, body, message):
    answer = guarded.post(PATH, {"mixture": MIXTURE} | body)
    assert answer.status_code == 400, answer.text
    assert message in answer.json()["detail"]


def test_an_adaptive_mixture_is_traced_from_the_posted_log(guarded, demo_work, tmp_path):
    mixture = MIXTURE | {"global_batch_size": 4, "policy": {"name": "static", "update_every": 2}}
    log = [{"step": 5, "weights": {"wiki": 0.1, "code": 0.9}, "details": {"decided_at": 3}}]
    answer = guarded.post(PATH, {"mixture": mixture, "step": 40, "weight_log": log})
    assert answer.status_code == 200, answer.text
    local = mixture | {"catalog": str(demo_work / "catalog.duckdb"), "cache_dir": str(tmp_path)}
    expected = trace(local, step=40, weight_log=log)
    assert answer.json()["weights"] == expected["weights"]
    assert expected["weights"] == pytest.approx({"wiki": 0.1, "code": 0.9}, abs=1e-4)
    assert [s["component"] for s in answer.json()["sequences"]] == [
        s["component"] for s in expected["sequences"]
    ]


def test_origin_follows_each_document_to_its_raw_input(guarded, demo_work, tmp_path):
    from mixplane.io.urls import open_url

    local = MIXTURE | {"catalog": str(demo_work / "catalog.duckdb"), "cache_dir": str(tmp_path)}
    expected = trace(local, index=2, origin=True, origins=Origins({}).find)
    for piece in expected["sequences"][0]["documents"]:
        (kept,) = piece["origin"]  # one processing step between the raw files and the tokens
        assert kept["folder"] == str(demo_work / "clean")
        raw = kept["input"]["url"]
        assert raw.startswith(str(demo_work / "corpus" / "raw"))
        with open_url(raw) as handle:  # decompressed by its suffix
            assert f'"{piece["id"]}"'.encode() in handle.read()
    answer = guarded.post(PATH, {"mixture": MIXTURE, "index": 2, "origin": True})
    assert answer.status_code == 200, answer.text
    assert answer.json()["sequences"] == expected["sequences"]


def test_an_unpacked_mixture_is_traced_as_the_python_api(guarded, demo_work, tmp_path):
    """packing: none through the service: a bucketed step's rows, each one document."""
    mixture = MIXTURE | {
        "packing": "none",
        "pad_id": 0,
        "bucketing": {"max_tokens_per_batch": 1024, "window": 64},
    }
    body = {"mixture": mixture, "step": 5, "rank": 1, "world_size": 2, "properties": ["language"]}
    answer = guarded.post(PATH, body)
    assert answer.status_code == 200, answer.text
    local = mixture | {"catalog": str(demo_work / "catalog.duckdb"), "cache_dir": str(tmp_path)}
    expected = trace(local, {key: value for key, value in body.items() if key != "mixture"})
    got = answer.json()
    assert got["packing"] == "none" and got["positions"] == expected["positions"]
    assert got["sequences"] == [
        {**s, "documents": [d | {"origin": None} for d in s["documents"]]}
        for s in expected["sequences"]
    ]
    assert all(len(s["documents"]) == 1 for s in got["sequences"])
    refused = guarded.post(PATH, body | {"batch_size": 4})
    assert refused.status_code == 400 and "without batch_size" in refused.text
