"""Schemathesis hooks of `test_serve_contract.py`: in requests meant to be valid, the values
only the catalog can vouch for (a predicate's columns, a column, a dataset, a mixture's
components) are ones the demo catalog holds; everything else stays as generated. Every other
valid request naming a document, image, dataset or run names one that exists (from
$CONTRACT_RESOURCES, which the test writes). A valid request that would repeat one already
sent, once those values are in, is not sent again."""

from __future__ import annotations

import itertools
import json
import os

import schemathesis
from schemathesis.generation import GenerationMode

MIXTURE = {
    "seq_len": 128,
    "datasets": ["demo"],
    "components": {
        "wiki": {"where": "source = 'wiki'", "weight": 0.6},
        "code": {"where": "source = 'code'", "weight": 0.4},
    },
}
# Taken in turn by the requests meant to be valid (None: the parameter left out).
CATALOG_VALUES = {
    "where": ["TRUE", "language = 'de'", "source IN ('wiki', 'code') AND n_tokens > 50"],
    "by": ["source", "language", "n_tokens", "language_score"],
    "column": ["n_tokens", "language_score"],
    "datasets": [None, "demo@1", "demo"],
}
_turns = {name: itertools.cycle(values) for name, values in CATALOG_VALUES.items()}
# Operation -> path parameters of things that exist, taken in turn with generated ones (None).
_resources = {
    operation: itertools.cycle([None, *found])
    for operation, found in json.loads(os.environ.get("CONTRACT_RESOURCES", "{}")).items()
}
_sent: set[str] = set()
TRACE = "POST /api/mixtures/trace"
_trace_properties = itertools.cycle([[], ["language"], ["n_tokens", "language_score"]])


def _traceable(body: dict) -> dict:
    """A trace request that MIXTURE answers: whether a layout fits depends on the mixture
    (without global_batch_size a step needs batch_size; the step's sequences on a rank must
    be within max_sequences and its positions within the stream) and on which columns the
    catalog holds, and a rank is below its world size (which JSON Schema cannot say). A
    weight log names the components of a mixture, and origins are left to the API tests
    (they read every processing step's parts: not a few milliseconds)."""
    body = dict(body)
    world = min(body.get("world_size") or 1, 64)
    body |= {"world_size": world, "rank": (body.get("rank") or 0) % world, "origin": False}
    body |= {"properties": next(_trace_properties), "weight_log": None}
    if body.get("index") is not None:
        body.pop("step", None)
    else:
        most = body.get("max_sequences") or 1024
        body |= {"step": (body.get("step") or 0) % 1000, "index": None}
        body["batch_size"] = min(body.get("batch_size") or 1, most)
    return body


def _valid(case) -> bool:
    return case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE


@schemathesis.hook
def filter_case(context, case):
    """Drop a valid request of the coverage phase (which varies one value at a time) that is
    the same as one sent but for the values put in below."""
    if not _valid(case) or case.meta.phase.name != "coverage":
        return True
    query = case.query if isinstance(case.query, dict) else {}
    body = case.body if isinstance(case.body, dict) else {}
    kept = {
        "operation": case.operation.label,
        "path": case.path_parameters,
        "query": {k: v for k, v in query.items() if k not in CATALOG_VALUES},
        "body": {k: v for k, v in body.items() if k != "mixture"} if "mixture" in body else body,
    }
    key = json.dumps(kept, sort_keys=True, default=repr)
    if key in _sent:
        return False
    _sent.add(key)
    return True


@schemathesis.hook
def map_case(context, case):
    if not _valid(case):
        return case
    if isinstance(case.query, dict):
        query = dict(case.query)  # a new dict: the generated one may be shared
        for name, turn in _turns.items():
            if name in query:
                query[name] = next(turn)
        case.query = {name: value for name, value in query.items() if value is not None}
    if isinstance(case.body, dict) and "mixture" in case.body:
        case.body = case.body | {"mixture": MIXTURE}
        if case.operation.label == TRACE:
            case.body = _traceable(case.body)
    existing = _resources.get(case.operation.label)
    if existing is not None:
        chosen = next(existing)
        if chosen is not None:
            case.path_parameters = dict(case.path_parameters or {}) | chosen
    return case
