"""Mixture specs: YAML and dicts share one model; bad configs fail early with clear errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mixtures import three_sources

from mixplane.errors import ConfigError
from mixplane.mix import MixtureSpec, MixtureTree, load_mixture


def spec(**fields) -> MixtureSpec:
    return MixtureSpec.parse({"seq_len": 16, "components": three_sources()} | fields)


def test_yaml_and_dict_give_the_same_spec(tmp_path: Path):
    (tmp_path / "catalog.duckdb").write_bytes(b"")
    path = tmp_path / "mix.yaml"
    path.write_text(
        "catalog: catalog.duckdb\nseq_len: 16\nseed: 7\ncomponents:\n"
        "  wiki:   {where: \"source = 'wiki'\", weight: 0.5}\n"
        "  code:   {where: \"source = 'code'\", weight: 0.3}\n"
        "  web_de: {where: \"source = 'web' AND language = 'de'\", weight: 0.2}\n"
    )
    from_yaml = load_mixture(path)
    assert from_yaml.catalog == str(tmp_path / "catalog.duckdb")
    from_dict = spec(seed=7, catalog=str(tmp_path / "catalog.duckdb"))
    assert from_yaml == from_dict
    assert from_yaml.fingerprint() == from_dict.fingerprint()
    assert spec(seed=8).fingerprint() != from_dict.fingerprint()


def test_nested_components_combine_predicates_and_split_weights():
    nested = spec(
        components={
            "web": {
                "where": "source = 'web'",
                "weight": 0.6,
                "max_epochs": 2,
                "components": {
                    "en": {"where": "language = 'en'", "weight": 3},
                    "de": {"where": "language = 'de'", "weight": 1, "on_exhausted": "drop"},
                },
            },
            "wiki": {"where": "source = 'wiki'", "weight": 0.4},
        }
    )
    tree = MixtureTree(nested)
    assert tree.names == ["web/en", "web/de", "wiki"]
    assert tree.leaves[1].where == "(source = 'web') AND (language = 'de')"
    assert [leaf.max_epochs for leaf in tree.leaves] == [2, 2, None]
    assert [leaf.on_exhausted for leaf in tree.leaves] == ["stop", "drop", "stop"]
    assert tree.leaf_weights([1, 1, 1]).tolist() == pytest.approx([0.45, 0.15, 0.4])
    # A schedule may re-weight one sibling group by name and leave the others alone.
    shifted = tree.leaf_weights([1, 1, 1], {"web/en": 1, "web/de": 1})
    assert shifted.tolist() == pytest.approx([0.3, 0.3, 0.4])


def test_computed_weights_use_token_counts():
    natural = MixtureTree(spec(weighting="natural", components={k: {} for k in "abc"}))
    assert natural.leaf_weights([600, 300, 100]).tolist() == pytest.approx([0.6, 0.3, 0.1])
    flat = MixtureTree(
        spec(weighting={"method": "temperature", "temperature": 1e6}, components={"a": {}, "b": {}})
    )
    assert flat.leaf_weights([900, 100]).tolist() == pytest.approx([0.5, 0.5], abs=1e-5)
    unimax = MixtureTree(
        spec(
            total_tokens=1500,
            weighting={"method": "unimax", "max_epochs": 2},
            components={k: {} for k in "abc"},
        )
    )
    assert unimax.leaf_weights([100, 1000, 1000]).tolist() == pytest.approx(
        [200 / 1500, 650 / 1500, 650 / 1500]
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"seq_len": 0}, "seq_len: Input should be greater than 0"),
        ({"seq_len": -5}, "seq_len"),
        ({"components": {}}, "components"),
        ({"components": {"a b": {"weight": 1}}}, "may only use letters"),
        ({"components": {"a": {"weight": -1}, "b": {"weight": 1}}}, "greater than or equal to 0"),
        ({"schedule": [{"step": 5, "weights": {"wiki": -1}}]}, "must be a number >= 0"),
        (
            {"schedule": [{"step": 5, "weights": {"wiki": 1}}]},
            "a schedule counts optimizer steps, so the mixture needs global_batch_size",
        ),
        ({"overlap": "merge"}, "overlap"),
        ({"colour": "red"}, "unknown key 'colour'"),
        ({"weighting": {"method": "unimax"}}, "unimax weighting needs max_epochs"),
    ],
)
def test_invalid_fields_are_named(fields, message):
    with pytest.raises(ConfigError, match=message):
        spec(**fields)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"components": {"a": {"weight": 0}, "b": {"weight": 0}}},
            "weights must sum to a positive number",
        ),
        ({"components": {"a": {"weight": 1}, "b": {}}}, "b: no weight"),
        (
            {"weighting": "natural", "components": {"a": {"weight": 1}, "b": {}}},
            "a: weight given, but the top-level components take natural weights",
        ),
        (
            {"weighting": {"method": "unimax", "max_epochs": 4}, "components": {"a": {}, "b": {}}},
            "needs total_tokens",
        ),
        (
            {
                "global_batch_size": 8,
                "schedule": [{"step": 10, "weights": {"wiki": 1, "cod": 1, "web_de": 1}}],
            },
            r"unknown components \['cod'\] \(known: wiki, code, web_de\)",
        ),
        (
            {"global_batch_size": 8, "schedule": [{"step": 10, "weights": {"wiki": 1, "code": 1}}]},
            "but not their siblings",
        ),
        (
            {
                "global_batch_size": 8,
                "schedule": [{"step": 10, "weights": {"wiki": 0, "code": 0, "web_de": 0}}],
            },
            "must sum to a positive number",
        ),
    ],
)
def test_bad_weights_fail_before_any_data_is_read(fields, message):
    with pytest.raises(ConfigError, match=message):
        MixtureTree(spec(**fields)).leaf_weights(np.ones(len(spec(**fields).components)))


def test_yaml_errors_name_the_file(tmp_path: Path):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ConfigError, match="missing.yaml: file not found"):
        load_mixture(missing)
    broken = tmp_path / "broken.yaml"
    broken.write_text("seq_len: [1,\n")
    with pytest.raises(ConfigError, match="broken.yaml: invalid YAML"):
        load_mixture(broken)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("seq_len: 0\ncomponents: {a: {weight: 1}}\n")
    with pytest.raises(ConfigError, match="wrong.yaml: seq_len"):
        load_mixture(wrong)


def test_every_mixture_field_is_in_the_reference():
    """docs/mixture.md lists every field of the mixture models, so the reference keeps up."""
    from mixplane.mix.policy.spec import PolicySpec
    from mixplane.mix.spec import ComponentSpec, MixtureSpec, ScheduleEntry, Weighting

    reference = (Path(__file__).parent.parent / "docs" / "mixture.md").read_text()
    rows = {line.split("|")[1].strip() for line in reference.splitlines() if line.startswith("| `")}
    for model in (MixtureSpec, ComponentSpec, Weighting, ScheduleEntry, PolicySpec):
        missing = [name for name in model.model_fields if f"`{name}`" not in rows]
        assert missing == [], f"{model.__name__} fields missing from docs/mixture.md"
