"""Dataset pins in mixtures: `datasets: [web@1, wiki@2]` keeps a mixture, its stream and its
saved loader states unchanged whatever is registered in the catalog afterwards."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mixplane.catalog import Catalog
from mixplane.errors import ConfigError
from mixplane.load import MixtureDataset
from mixplane.load.tools.synthetic import write_token_dataset
from mixplane.mix import MixtureSpec, MixtureTree

FOLDERS = {
    # name: (registered as, write_token_dataset options)
    "wiki": ("wiki", {"documents": 300, "seed": 1, "source": "wiki", "mean_tokens": 60}),
    "web": ("web", {"documents": 400, "seed": 2, "source": "web", "mean_tokens": 50}),
    "web_v2": ("web", {"documents": 350, "seed": 3, "source": "web", "mean_tokens": 50}),
    "wiki_v2": ("wiki", {"documents": 250, "seed": 4, "source": "wiki", "mean_tokens": 60}),
    "books": ("books", {"documents": 100, "seed": 5, "source": "books", "mean_tokens": 70}),
    # Rows that match `source = 'wiki'`: not unrelated to a mixture that selects by source.
    "encyclopedia": (
        "encyclopedia",
        {"documents": 100, "seed": 6, "source": "wiki", "mean_tokens": 60},
    ),
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pins")
    for folder, (_, options) in FOLDERS.items():
        write_token_dataset(str(root / folder), **options)
    return root


@pytest.fixture
def catalog(folders: Path, tmp_path: Path) -> Catalog:
    """A fresh catalog holding wiki@1 and web@1 (tests register more in their own copy)."""
    catalog = Catalog(str(tmp_path / "catalog.duckdb"))
    register(catalog, folders, "wiki", "web")
    return catalog


def register(catalog: Catalog, folders: Path, *names: str) -> None:
    for folder in names:
        catalog.register(str(folders / folder), name=FOLDERS[folder][0])


def mixture(catalog: Catalog, **fields) -> dict:
    return {
        "catalog": catalog.path,
        "cache_dir": str(Path(catalog.path).parent / "cache"),
        "seq_len": 64,
        "seed": 11,
        "eos_id": 0,
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.6},
            "web": {"where": "source = 'web'", "weight": 0.4},
        },
    } | fields


def take(dataset: MixtureDataset, count: int) -> np.ndarray:
    stream = iter(dataset)
    return np.stack([np.asarray(next(stream)["input_ids"]) for _ in range(count)])


def refs(dataset: MixtureDataset) -> list[str]:
    return [info["dataset"] for info in dataset.resolved.datasets]


def resume_after(spec: dict, change, read: int = 25, more: int = 40) -> MixtureDataset:
    """Read `read` sequences, save the state, apply `change` (registrations), then build the
    loader again, load the state and check the stream goes on as if nothing happened."""
    before = MixtureDataset(spec)
    take(before, read)
    state = before.state_dict()
    expected = before.read_positions(np.arange(read, read + more))["input_ids"]
    change()
    after = MixtureDataset(spec)
    assert after.fingerprint == before.fingerprint
    after.load_state_dict(state)
    assert np.array_equal(take(after, more), expected)
    return after


def test_pins_keep_the_stream_and_its_states_through_registrations(catalog, folders):
    # Global pins; the `web` component names its dataset without a version and takes the pin,
    # and has no `where`: a dataset registered later could only enter it through the pins.
    spec = mixture(
        catalog,
        datasets=["wiki@1", "web@1"],
        components={
            "wiki": {"where": "source = 'wiki'", "weight": 0.6},
            "web": {"datasets": ["web"], "weight": 0.4},
        },
    )
    after = resume_after(
        spec,
        # An unrelated dataset, one whose rows match `source = 'wiki'`, and new versions of
        # both pinned datasets.
        lambda: register(catalog, folders, "books", "encyclopedia", "web_v2", "wiki_v2"),
    )
    assert refs(after) == ["web@1", "wiki@1"]
    assert [v.ref for v in catalog.latest()] == ["books@1", "encyclopedia@1", "web@2", "wiki@2"]


def test_pins_per_component(catalog, folders):
    spec = mixture(
        catalog,
        components={
            "wiki": {"datasets": ["wiki@1"], "weight": 0.6},
            "web": {"datasets": ["web@1"], "weight": 0.4},
        },
    )
    after = resume_after(spec, lambda: register(catalog, folders, "web_v2", "encyclopedia"))
    assert refs(after) == ["web@1", "wiki@1"]


def test_without_pins_only_the_datasets_selected_count(catalog, folders):
    spec = mixture(catalog)
    # A dataset none of whose documents match any component changes nothing.
    resume_after(spec, lambda: register(catalog, folders, "books"))
    saved = MixtureDataset(spec)
    state = saved.state_dict()
    # A dataset whose documents match `source = 'wiki'` joins the mixture: another stream.
    register(catalog, folders, "encyclopedia")
    grown = MixtureDataset(spec)
    assert refs(grown) == ["encyclopedia@1", "web@1", "wiki@1"]
    assert grown.fingerprint != saved.fingerprint
    with pytest.raises(ConfigError, match="saved for another mixture or other data versions"):
        grown.load_state_dict(state)
    # So does a new version of a selected dataset (the latest is read).
    register(catalog, folders, "web_v2")
    assert refs(MixtureDataset(spec)) == ["encyclopedia@1", "web@2", "wiki@1"]


def test_a_name_without_version_is_the_latest_at_resolution(catalog, folders):
    spec = mixture(catalog, datasets=["wiki", "web"])
    first = MixtureDataset(spec)
    assert refs(first) == ["web@1", "wiki@1"]
    resume_after(spec, lambda: register(catalog, folders, "books", "encyclopedia"))
    register(catalog, folders, "wiki_v2")
    newer = MixtureDataset(spec)
    assert refs(newer) == ["web@1", "wiki@2"]
    assert newer.fingerprint != first.fingerprint


def test_unknown_datasets_and_versions_name_what_exists(catalog, folders):
    register(catalog, folders, "wiki_v2")
    with pytest.raises(
        ConfigError,
        match=r"component 'wiki': dataset wiki has no version 7; its versions: "
        r"wiki@1, wiki@2",
    ):
        MixtureDataset(mixture(catalog, datasets=["wiki@7", "web@1"]))
    with pytest.raises(
        ConfigError, match=r"component 'web': no dataset named 'wbe'.*registered: web, wiki"
    ):
        MixtureDataset(
            mixture(
                catalog,
                components={
                    "wiki": {"where": "source = 'wiki'", "weight": 0.6},
                    "web": {"datasets": ["wbe@1"], "weight": 0.4},
                },
            )
        )
    with pytest.raises(ConfigError, match=r"component 'web': no document matches .* in \['wiki@1'"):
        MixtureDataset(mixture(catalog, datasets=["wiki@1"]))


@pytest.mark.parametrize(
    ("datasets", "message"),
    [
        (["web@x"], r"datasets: .*bad dataset reference 'web@x': 'x' after '@' is not a version"),
        (["@1"], r"bad dataset reference '@1': use NAME or NAME@N"),
        (["web@0"], r"'web@0'.*NAME@N with N >= 1"),
        (["web@1@2"], r"'web@1@2'"),
        (["web @1"], r"'web @1'"),
        (["web@1", "web@2"], r"dataset 'web' is listed twice \(web@1, web@2\)"),
        (["web", "web@2"], r"dataset 'web' is listed twice"),
        ([], r"datasets is empty; leave it out"),
    ],
)
def test_references_are_checked_when_the_spec_is_read(datasets, message):
    components = {"a": {"weight": 1}}
    with pytest.raises(ConfigError, match=message):
        MixtureSpec.parse({"seq_len": 8, "datasets": datasets, "components": components})
    nested = {"a": {"weight": 1, "datasets": datasets}}
    with pytest.raises(ConfigError, match=r"components\.a\.datasets: "):
        MixtureSpec.parse({"seq_len": 8, "components": nested})


def leaf_datasets(outer, **components) -> list:
    spec = MixtureSpec.parse({"seq_len": 8, "datasets": outer, "components": components})
    return [leaf.datasets for leaf in MixtureTree(spec).leaves]


def test_components_take_the_mixture_pins_by_name():
    pins = ["web@1", "wiki@2"]
    assert leaf_datasets(
        pins,
        all={"weight": 1},
        wiki={"weight": 1, "datasets": ["wiki"]},
        wiki_again={"weight": 1, "datasets": ["wiki@2"]},
    ) == [("web@1", "wiki@2"), ("wiki@2",), ("wiki@2",)]
    # A group's list applies to its children like the mixture's.
    assert leaf_datasets(
        ["web", "wiki"],
        group={
            "weight": 1,
            "datasets": ["wiki@2"],
            "components": {"a": {"weight": 1}, "b": {"weight": 1}},
        },
    ) == [("wiki@2",), ("wiki@2",)]
    assert leaf_datasets(None, a={"weight": 1, "datasets": ["wiki"]}) == [("wiki",)]
    with pytest.raises(ConfigError, match=r"wiki: wiki@3 conflicts with wiki@2, which it inherits"):
        leaf_datasets(pins, wiki={"weight": 1, "datasets": ["wiki@3"]})
    with pytest.raises(ConfigError, match=r"books: datasets \['books'\] are outside the ones"):
        leaf_datasets(pins, books={"weight": 1, "datasets": ["books"]})
