"""The catalog: registering tokenized folders, immutable versions, properties of any type."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from mixplane.catalog import Catalog, PredicateError
from mixplane.catalog.synthetic import random_properties, write_metadata_shards
from mixplane.errors import InputError, MixplaneError


def make_dataset(folder: Path, sizes=(40, 25, 35), seed: int = 0) -> list[pa.Table]:
    tables = [random_properties(n, seed=seed + i) for i, n in enumerate(sizes)]
    write_metadata_shards(str(folder), tables)
    return tables


def test_register_records_counts_schema_and_tokenizer(tmp_path: Path):
    tables = make_dataset(tmp_path / "web")
    catalog = Catalog(tmp_path / "catalog.duckdb")
    version = catalog.register(str(tmp_path / "web"), "web")
    assert version.ref == "web@1"
    assert version.uri == str((tmp_path / "web").resolve())
    assert version.documents == 100
    assert version.tokens == sum(pc.sum(t["n_tokens"]).as_py() for t in tables)
    assert [s.stem for s in version.shards] == [f"shard-00000-00{i}" for i in range(3)]
    assert [s.documents for s in version.shards] == [40, 25, 35]
    assert version.tokenizer["spec"] == "synthetic"
    assert version.schema["language"] == "VARCHAR"
    assert version.schema["quality"] == "DOUBLE"
    assert version.schema["is_boilerplate"] == "BOOLEAN"
    assert version.schema["tags"] == "VARCHAR[]"
    assert list(version.schema)[:2] == ["id", "n_tokens"]
    assert catalog.get("web").summary() == catalog.get("web@1").summary()


def test_registering_identical_data_again_is_a_noop(tmp_path: Path):
    make_dataset(tmp_path / "web")
    catalog = Catalog(tmp_path / "catalog.duckdb")
    first, created = catalog.register_verbose(str(tmp_path / "web"), "web")
    again, created_again = catalog.register_verbose(str(tmp_path / "web") + "/", "web")
    assert created and not created_again
    assert again.summary() == first.summary()
    assert [v.ref for v in catalog.versions()] == ["web@1"]


def test_changed_data_makes_a_new_version_and_old_versions_never_change(tmp_path: Path):
    folder = tmp_path / "web"
    make_dataset(folder)
    catalog = Catalog(tmp_path / "catalog.duckdb")
    first = catalog.register(str(folder), "web")
    snapshot = first.summary()
    german_before = catalog.select("language = 'de'", ["web@1"]).documents

    # Rewrite the folder: shard 1 now has more documents.
    tables = [random_properties(n, seed=i) for i, n in enumerate((40, 60, 35))]
    write_metadata_shards(str(folder), tables)
    second = catalog.register(str(folder), "web")
    assert second.ref == "web@2"
    assert second.documents == 135
    assert second.fingerprint != first.fingerprint

    assert catalog.get("web@1").summary() == snapshot
    assert [v.ref for v in catalog.versions()] == ["web@1", "web@2"]
    assert [v.ref for v in catalog.latest()] == ["web@2"]
    # The old version's files changed under it: it refuses rather than answer differently.
    with pytest.raises(MixplaneError, match=r"web@1: shard-00000-001\.meta\.parquet .* changed"):
        catalog.select("language = 'de'", ["web@1"])
    german_after = catalog.select("language = 'de'")
    assert german_after["web"].dataset == "web@2"
    assert german_after.documents >= german_before


def test_same_data_in_another_place_is_a_new_version(tmp_path: Path):
    make_dataset(tmp_path / "web")
    shutil.copytree(tmp_path / "web", tmp_path / "copy")
    catalog = Catalog(tmp_path / "catalog.duckdb")
    first = catalog.register(str(tmp_path / "web"), "web")
    moved = catalog.register(str(tmp_path / "copy"), "web")
    assert moved.ref == "web@2" and moved.fingerprint == first.fingerprint
    other = catalog.register(str(tmp_path / "web"), "mirror")
    assert other.ref == "mirror@1"
    assert catalog.select("true", ["web@1", "web@2", "mirror"]).documents == 300
    assert [p.dataset for p in catalog.select("true", ["web", "web@2", "web@1"])] == [
        "web@2",
        "web@1",
    ]


def test_properties_of_every_type(tmp_path: Path):
    table = pa.table(
        {
            "id": [f"d{i}" for i in range(8)],
            "n_tokens": pa.array([5, 6, 7, 8, 9, 10, 11, 12], pa.int64()),
            "language": ["en", "de", None, "de", "fr", "en", "de", "zh"],
            "stars": pa.array([1, 5, 3, None, 4, 2, 5, 0], pa.int16()),
            "quality": [0.1, 0.9, 0.5, 0.7, None, 0.3, 0.95, 0.2],
            "is_code": [True, False, None, True, False, False, True, False],
            "topics": [["a", "b"], [], None, ["b"], ["c"], ["a"], ["a", "c"], ["b", "c"]],
            "lengths": pa.array(
                [[1, 2], [3], [], None, [5], [6, 7], [8], [9]], pa.list_(pa.int32())
            ),
            "crawled": pa.array(
                [dt.datetime(2024, 1, 1 + i) for i in range(8)], pa.timestamp("us")
            ),
            "meta": pa.array([{"url": f"https://x/{i}", "depth": i} for i in range(8)]),
        }
    )
    write_metadata_shards(str(tmp_path / "typed"), [table.slice(0, 5), table.slice(5)])
    catalog = Catalog(tmp_path / "catalog.duckdb")
    version = catalog.register(str(tmp_path / "typed"), "typed")
    assert version.schema["stars"] == "SMALLINT"
    assert version.schema["lengths"] == "INTEGER[]"
    assert version.schema["crawled"].startswith("TIMESTAMP")
    assert version.schema["meta"].startswith("STRUCT")

    def ids(where: str) -> list[str]:
        part = catalog.select(where)["typed"]
        shard, index = part.document_indices()
        return [table["id"][int(s) * 5 + int(i)].as_py() for s, i in zip(shard, index, strict=True)]

    assert ids("language = 'de'") == ["d1", "d3", "d6"]
    assert ids("stars >= 4") == ["d1", "d4", "d6"]
    assert ids("quality > 0.5 AND is_code") == ["d3", "d6"]
    assert ids("NOT is_code") == ["d1", "d4", "d5", "d7"]
    assert ids("list_contains(topics, 'c')") == ["d4", "d6", "d7"]
    assert ids("len(topics) = 0") == ["d1"]
    assert ids("list_contains(lengths, 7)") == ["d5"]
    assert ids("crawled >= TIMESTAMP '2024-01-07'") == ["d6", "d7"]
    assert ids("meta.depth BETWEEN 2 AND 3") == ["d2", "d3"]
    assert ids("language IS NULL OR topics IS NULL") == ["d2"]


def test_datasets_with_different_properties_query_together(tmp_path: Path):
    write_metadata_shards(str(tmp_path / "web"), [random_properties(30, seed=3)])
    code = pa.table(
        {
            "id": ["c0", "c1", "c2"],
            "n_tokens": pa.array([10, 20, 30], pa.int64()),
            "stars": [3, 10, 50],
        }
    )
    write_metadata_shards(str(tmp_path / "code"), [code])
    catalog = Catalog(tmp_path / "catalog.duckdb")
    catalog.register(str(tmp_path / "web"), "web")
    catalog.register(str(tmp_path / "code"), "code")

    # A column only one dataset has reads as NULL in the other.
    starred = catalog.select("stars > 5")
    assert [p.dataset for p in starred] == ["code@1", "web@1"]
    assert starred["code"].documents == 2 and starred["code"].tokens == 50
    assert starred["web"].documents == 0
    either = catalog.select("stars > 5 OR language IS NOT NULL")
    assert either["web"].documents == 30
    with pytest.raises(PredicateError, match="unknown column 'stars'.*language"):
        catalog.select("stars > 5", ["web"])
    with pytest.raises(PredicateError, match="available columns: .*stars"):
        catalog.select("nope = 1")


def test_shards_with_different_columns_merge_by_name(tmp_path: Path):
    early = pa.table({"id": ["a", "b"], "n_tokens": pa.array([1, 2], pa.int64())})
    later = pa.table(
        {
            "score": [0.5, 0.9, 0.1],
            "id": ["c", "d", "e"],
            "n_tokens": pa.array([3, 4, 5], pa.int64()),
        }
    )
    write_metadata_shards(str(tmp_path / "grown"), [early, later])
    catalog = Catalog(tmp_path / "catalog.duckdb")
    version = catalog.register(str(tmp_path / "grown"), "grown")
    assert not version.uniform and list(version.schema) == ["id", "n_tokens", "score"]
    part = catalog.select("score > 0.3 OR id = 'a'")["grown"]
    assert part.document_indices()[0].tolist() == [0, 1, 1]
    assert part.document_indices()[1].tolist() == [0, 0, 1]
    assert part.tokens == 1 + 3 + 4
    assert catalog.register(str(tmp_path / "grown"), "same").uniform is False
    make_dataset(tmp_path / "web")
    assert catalog.register(str(tmp_path / "web"), "web").uniform is True


def test_registration_errors_name_the_problem(tmp_path: Path):
    catalog = Catalog(tmp_path / "catalog.duckdb")
    with pytest.raises(InputError, match="no such folder"):
        catalog.register(str(tmp_path / "absent"), "x")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="_manifest.json: missing"):
        catalog.register(str(tmp_path / "empty"), "x")

    make_dataset(tmp_path / "web")
    manifest_path = tmp_path / "web" / "_manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    manifest["shards"][1]["documents"] += 1
    manifest_path.write_bytes(orjson.dumps(manifest))
    with pytest.raises(InputError, match="shard shard-00000-001 metadata has 25 documents"):
        catalog.register(str(tmp_path / "web"), "x")
    manifest["kind"] = "process"
    manifest_path.write_bytes(orjson.dumps(manifest))
    with pytest.raises(InputError, match="kind is 'process', not 'tokenize'"):
        catalog.register(str(tmp_path / "web"), "x")

    write_metadata_shards(str(tmp_path / "nocount"), [pa.table({"id": ["a"], "n_tokens": [1]})])
    pq.write_table(pa.table({"id": ["a"]}), tmp_path / "nocount" / "shard-00000-000.meta.parquet")
    with pytest.raises(InputError, match="no 'n_tokens' column"):
        catalog.register(str(tmp_path / "nocount"), "x")

    make_dataset(tmp_path / "good")
    with pytest.raises(MixplaneError, match="bad dataset name"):
        catalog.register(str(tmp_path / "good"), "no spaces")


def test_lookup_errors_list_what_exists(tmp_path: Path):
    with pytest.raises(MixplaneError, match="no catalog at"):
        Catalog(tmp_path / "missing.duckdb").latest()
    make_dataset(tmp_path / "web")
    catalog = Catalog(tmp_path / "catalog.duckdb")
    catalog.register(str(tmp_path / "web"), "web")
    with pytest.raises(MixplaneError, match="no dataset named 'wbe'.*registered: web"):
        catalog.select("true", ["wbe"])
    with pytest.raises(MixplaneError, match="web has no version 3"):
        catalog.get("web@3")
    with pytest.raises(MixplaneError, match="NAME@N with N >= 1"):
        catalog.get("web@0")
    shutil.rmtree(tmp_path / "web")
    with pytest.raises(MixplaneError, match="web@1: its folder is gone"):
        catalog.select("true")


def test_catalog_on_object_storage(s3_bucket, tmp_path: Path):
    bucket, options = s3_bucket
    url = f"s3://{bucket}/tokens"
    tables = [random_properties(n, seed=i) for i, n in enumerate((60, 45))]
    write_metadata_shards(url, tables, storage_options=options)
    catalog = Catalog(tmp_path / "catalog.duckdb", storage_options=options)
    version = catalog.register(url, "remote")
    assert version.uri == url and version.documents == 105
    part = catalog.select("language = 'en' AND quality > 0.3")["remote"]
    expected = [
        n
        for table in tables
        for lang, quality, n in zip(
            table["language"].to_pylist(),
            table["quality"].to_pylist(),
            table["n_tokens"].to_pylist(),
            strict=True,
        )
        if lang == "en" and quality > 0.3
    ]
    assert part.documents == len(expected) > 0
    assert part.document_tokens().tolist() == expected
    assert catalog.register(url, "remote").ref == "remote@1"


def test_a_column_without_values_reads_as_null_not_as_a_type(tmp_path: Path, cli):
    """Parquet's null type (a property no document has) is shown as such; queries on it, and
    on a typed column that is null everywhere, count every document."""
    table = random_properties(20, seed=1)
    table = table.append_column("nothing", pa.array([None] * 20))
    table = table.append_column("unscored", pa.array([None] * 20, pa.float64()))
    write_metadata_shards(str(tmp_path / "web"), [table])
    write_metadata_shards(str(tmp_path / "wiki"), [random_properties(10, seed=2)])
    catalog = Catalog(tmp_path / "c.duckdb")
    columns = catalog.register(str(tmp_path / "web"), "web").summary()["columns"]
    assert columns["nothing"] == "null (no values)" and columns["unscored"] == "DOUBLE"
    catalog.register(str(tmp_path / "wiki"), "wiki")
    assert catalog.select("nothing IS NULL AND unscored IS NULL").documents == 30
    code, shown, _ = cli("catalog", "show", "web@1", "-c", str(tmp_path / "c.duckdb"))
    assert code == 0 and "null (no values)" in shown and "NULL" not in shown


def test_a_declared_type_wins_over_the_null_type_of_shards_or_datasets_without_values(
    tmp_path: Path,
):
    """A shard without any score beside one with scores reads as the declared DOUBLE; over
    datasets, the typed one's type is the column's, whichever comes first."""
    from mixplane.catalog.catalog import columns_of

    scores = pa.array([0.1 * i for i in range(10)])
    empty = random_properties(20, seed=1).append_column("score", pa.array([None] * 20))
    write_metadata_shards(
        str(tmp_path / "mixed"),
        [empty, random_properties(10, seed=2).append_column("score", scores)],
    )
    write_metadata_shards(str(tmp_path / "empty"), [empty])
    write_metadata_shards(
        str(tmp_path / "typed"), [random_properties(10, seed=3).append_column("score", scores)]
    )
    write_metadata_shards(str(tmp_path / "other"), [random_properties(5, seed=4)])
    catalog = Catalog(tmp_path / "c.duckdb")
    mixed = catalog.register(str(tmp_path / "mixed"), "mixed")
    assert mixed.schema["score"] == "DOUBLE" and mixed.summary()["columns"]["score"] == "DOUBLE"
    assert catalog.select("score IS NULL", ["mixed"]).documents == 20
    assert catalog.select("score > 0.45", ["mixed"]).documents == 5

    empty_version = catalog.register(str(tmp_path / "empty"), "empty")
    typed = catalog.register(str(tmp_path / "typed"), "typed")
    other = catalog.register(str(tmp_path / "other"), "other")
    assert empty_version.summary()["columns"]["score"] == "null (no values)"
    assert columns_of([empty_version, typed, other])["score"] == "DOUBLE"
    assert columns_of([empty_version, other])["score"] == '"NULL"'
    selection = catalog.select("score IS NULL OR score > 0.45", ["empty", "typed", "other"])
    assert [part.documents for part in selection] == [20, 5, 5]


def test_registering_into_a_catalog_on_object_storage(s3_bucket, tmp_path: Path):
    """A catalog at an s3:// URL is downloaded, registered into and uploaded; registering
    unchanged data uploads nothing; a catalog changed meanwhile is not overwritten."""
    import s3fs

    from mixplane.catalog import remote_file

    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    for name, seed in (("web", 0), ("wiki", 5)):
        write_metadata_shards(f"s3://{bucket}/{name}", [random_properties(30, seed=seed)],
                              storage_options=options)  # fmt: skip
    remote = Catalog(f"s3://{bucket}/catalog.duckdb", storage_options=options)
    assert remote.register_verbose(f"s3://{bucket}/web", "web")[0].ref == "web@1"
    assert remote.register_verbose(f"s3://{bucket}/wiki", "wiki")[0].ref == "wiki@1"
    stamp = fs.info(f"{bucket}/catalog.duckdb")["ETag"]
    assert remote.register_verbose(f"s3://{bucket}/web", "web")[1] is False
    assert fs.info(f"{bucket}/catalog.duckdb")["ETag"] == stamp
    fs.get_file(f"{bucket}/catalog.duckdb", str(tmp_path / "copy.duckdb"))
    local = Catalog(tmp_path / "copy.duckdb", storage_options=options)
    assert [version.ref for version in local.versions()] == ["web@1", "wiki@1"]
    # Another register uploads while this one works on its copy: this one refuses.
    write_metadata_shards(f"s3://{bucket}/web2", [random_properties(20, seed=9)],
                          storage_options=options)  # fmt: skip
    local.register(f"s3://{bucket}/web2", "web2")
    refused = pytest.raises(MixplaneError, match="changed while this register ran")
    with refused, remote_file.catalog_to_update(remote.path, options) as copy:
        fs.put_file(str(tmp_path / "copy.duckdb"), f"{bucket}/catalog.duckdb")
        copy.changed = True
    assert [version.ref for version in remote_versions(fs, bucket, tmp_path)] == [
        "web@1",
        "web2@1",
        "wiki@1",
    ]


def remote_versions(fs, bucket: str, folder: Path) -> list:
    fs.get_file(f"{bucket}/catalog.duckdb", str(folder / "now.duckdb"))
    return Catalog(folder / "now.duckdb").versions()
