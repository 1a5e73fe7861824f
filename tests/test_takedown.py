"""Takedowns: `mixplane takedown` removes documents by domain, URL prefix or id from the
latest version of every dataset, rewriting only the shards that held them; mixtures that
follow the latest versions stop reading them, pinned ones are flagged.

Every document's tokens are its number (plus a base per dataset) repeated, so the tokens
of any batch say which documents it read."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
import yaml
from conftest import Service
from readme_blocks import readme_block

from mixplane.catalog import Catalog
from mixplane.catalog.columns import AddedColumn, ColumnFile
from mixplane.errors import MixplaneError, SupersededVersionWarning
from mixplane.load import MixtureDataset
from mixplane.load.tools.synthetic import write_token_dataset
from mixplane.store import TokenizedDataset

DOC_TOKENS = 20
PER_SHARD = 40  # DOC_TOKENS uint16 tokens a document, shards cut at PER_SHARD documents
BASES = {"web": 1000, "wiki": 5000, "books": 9000}
WEB_HOSTS = ("www.example.com", "EXAMPLE.com", "a.b.example.com", "notexample.com", "other.org")


def web_url(number: int) -> str | None:
    """web: documents 80-159 (shards 2 and 3) on example.com and its look-alikes, the
    others on other.org, a few without a url."""
    if 80 <= number < 160:
        return f"https://{WEB_HOSTS[number % 5]}:443/page/{number}"
    return None if number % 7 == 0 else f"https://other.org/{number}"


def wiki_url(number: int) -> str:
    """wiki: shard 1 on en.example.com, the rest on wiki.org; one blog path on shard 2."""
    if 40 <= number < 80:
        return f"http://en.example.com/wiki/{number}"
    if number in (90, 91):
        return f"https://blog.example.org/2024/post-{number}"
    return f"https://wiki.org/{number}"


URLS = {"web": web_url, "wiki": wiki_url}
SIZES = {"web": 240, "wiki": 120, "books": 80}


def taken_down(name: str, number: int) -> bool:
    """Whether the README's request (domain example.com, URL prefix
    https://blog.example.org/2024/) names document `number` of `name`."""
    url = URLS[name](number) if name in URLS else None
    if url is None:
        return False
    host = url.split("://", 1)[1].split("/", 1)[0].split(":")[0].lower()
    return (
        host == "example.com"
        or host.endswith(".example.com")
        or url.startswith("https://blog.example.org/2024/")
    )


def write_dataset(folder: Path | str, name: str, options: dict | None = None) -> None:
    base, count = BASES[name], SIZES[name]
    url = URLS.get(name)
    write_token_dataset(
        str(folder),
        storage_options=options,
        documents=count,
        seed=1,
        source=name,
        vocab_size=1 << 16,
        shard_bytes=PER_SHARD * DOC_TOKENS * 2,
        lengths=lambda rng, n: np.full(n, DOC_TOKENS),
        tokens=lambda rng, total: np.repeat(base + np.arange(total // DOC_TOKENS), DOC_TOKENS),
        properties=(lambda numbers: {"url": [url(int(n)) for n in numbers]}) if url else None,
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """The datasets, written once for the module (each test takes a copy)."""
    root = tmp_path_factory.mktemp("takedown-data")
    for name in BASES:
        write_dataset(root / name, name)
    return root


@pytest.fixture
def work(written: Path, tmp_path: Path, monkeypatch) -> Path:
    """web@1, wiki@1 (with urls) and books@1 (without) in a catalog, and a mixture that
    follows the latest versions, in the working folder."""
    for name in BASES:
        shutil.copytree(written / name, tmp_path / name)
        Catalog(tmp_path / "catalog.duckdb").register(str(tmp_path / name), name=name)
    (tmp_path / "mixture.yaml").write_text(yaml.safe_dump(mixture()))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def mixture(**fields) -> dict:
    return {
        "catalog": "catalog.duckdb",
        "seq_len": 64,
        "seed": 3,
        "eos_id": 0,
        "max_epochs": 2,  # an epoch drops its last partial sequence: two read every document
        "on_exhausted": "drop",
        "components": {name: {"where": f"source = '{name}'", "weight": 1} for name in BASES},
    } | fields


def file_hashes(folder: Path) -> dict[str, str]:
    return {
        path.name: xxhash.xxh3_128_hexdigest(path.read_bytes())
        for path in folder.glob("shard-*")
        if path.is_file()
    }


def epoch_documents(spec: dict) -> set[tuple[str, int]]:
    """Every document the mixture reads (two epochs), from the tokens of its batches."""
    dataset = MixtureDataset(spec)
    tokens = np.concatenate([np.asarray(batch["input_ids"]).ravel() for batch in dataset])
    tokens = tokens[tokens != 0]
    found = set()
    for name, base in BASES.items():
        numbers = tokens[(tokens >= base) & (tokens < base + SIZES[name])] - base
        found.update((name, int(n)) for n in np.unique(numbers))
    return found


def run_lines(cli, block: str) -> list[tuple[int, str, str]]:
    results = []
    for line in block.strip().splitlines():
        args = shlex.split(line, comments=True)
        assert args[0] == "mixplane"
        results.append(cli(*args[1:]))
    return results


def test_a_domain_taken_down_as_the_readme_writes_it(work: Path, cli):
    before = {name: file_hashes(work / name) for name in BASES}
    every = {(name, n) for name in BASES for n in range(SIZES[name])}
    assert epoch_documents(mixture()) == every
    dry, applied, check = run_lines(cli, readme_block("bash", "mixplane takedown"))
    assert [dry[0], applied[0], check[0]] == [0, 0, 0], (dry, applied, check)
    gone = {(name, n) for name, n in every if taken_down(name, n)}
    assert len(gone) == 48 + 40 + 2  # notexample.com and other.org stay
    assert "would remove 90 documents" in dry[1] and "removed 90 documents" in applied[1]
    # books has no urls: said, not silently passed over.
    assert "note: books@1 has no url property: only --id criteria" in applied[2]

    catalog = Catalog(work / "catalog.duckdb")
    latest = {version.name: version for version in catalog.latest()}
    assert {name: v.ref for name, v in latest.items()} == {
        "books": "books@1",
        "web": "web@2",
        "wiki": "wiki@2",
    }
    # No document of the domain in the new versions, nor in an epoch of the mixture.
    for name in ("web", "wiki"):
        meta = pq.read_table(latest[name].meta_urls()).to_pylist()
        numbers = [int(row["id"].rsplit("-", 1)[1]) for row in meta]
        assert numbers == [n for n in range(SIZES[name]) if (name, n) not in gone]
    assert epoch_documents(mixture()) == every - gone

    # Shards 0, 1, 4 and 5 of web and 0 of wiki are the old files (hard links); wiki's
    # shard 1, all on en.example.com, is gone; the others are rewritten.
    web, wiki = work / "web-takedown-2", work / "wiki-takedown-2"
    after = {"web": file_hashes(web), "wiki": file_hashes(wiki)}
    for name, untouched, dropped in (("web", (0, 1, 4, 5), ()), ("wiki", (0,), (1,))):
        for stem, digest in before[name].items():
            new = work / f"{name}-takedown-2" / stem
            shard = int(stem.split("-")[2][:3])
            if shard in untouched:
                assert after[name][stem] == digest, stem
                assert (work / name / stem).stat().st_ino == new.stat().st_ino
            elif shard in dropped:
                assert stem not in after[name]
            else:
                assert after[name][stem] != digest, stem
    assert [s.stem for s in latest["wiki"].shards] == ["shard-00000-000", "shard-00000-002"]
    TokenizedDataset(str(web)).verify()  # the manifest's hashes are the files'
    TokenizedDataset(str(wiki)).verify()

    manifest = json.loads((web / "_manifest.json").read_text())
    request = manifest["takedown"]["request"]
    assert manifest["parents"] == [str(work / "web" / "_manifest.json")]
    assert manifest["takedowns"] == [
        {
            "request": request,
            "reference": "TICKET-123",
            "criteria": {
                "domains": ["example.com"],
                "urls": ["https://blog.example.org/2024/"],
                "ids": [],
            },
            "at": manifest["takedown"]["at"],
            "removed": {"documents": 48, "tokens": 48 * DOC_TOKENS, "shards_rewritten": 2},
        }
    ]
    removed = pq.read_table(wiki / "_takedown" / "removed.parquet").to_pylist()
    assert sorted(row["id"] for row in removed) == sorted(
        f"wiki-1-{n}" for name, n in gone if name == "wiki"
    )
    assert {row["reason"] for row in removed} == {f"takedown {request}"}
    assert {row["criterion"] for row in removed} == {
        "domain example.com",
        "url https://blog.example.org/2024/",
    }
    code, out, _ = cli("lineage", "wiki@2", "--json")  # (a folder `wiki` is here)
    steps = json.loads(out)["steps"]
    assert code == 0 and len(steps) == 2  # the takedown, then the tokenized folder
    assert steps[0]["takedown"]["request"] == request and "takedown" not in steps[1]
    assert steps[0]["takedown"]["reference"] == "TICKET-123"
    code, out, _ = cli("lineage", "wiki@2")
    assert f"takedown {request} (reference TICKET-123) removed 42 documents of wiki@1" in out

    # The same request again finds nothing: no new version, nothing written.
    again = run_lines(cli, readme_block("bash", "mixplane takedown"))[1]
    assert again[0] == 0 and "nothing matched" in again[1]
    assert [v.ref for v in catalog.latest()] == ["books@1", "web@2", "wiki@2"]
    assert not list(work.glob("*-takedown-3"))


def test_a_dry_run_changes_nothing_and_counts(work: Path, cli):
    listing = sorted(p.name for p in work.iterdir())
    catalog_bytes = (work / "catalog.duckdb").read_bytes()
    code, out, err = cli(
        "takedown", "--domain", "example.com", "--reference", "T-9", "--dry-run", "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["dry_run"] and report["removed"]["documents"] == 88
    assert report["without_url"] == ["books@1"]
    assert {(d["from"], d["documents"], d["to"]) for d in report["datasets"]} == {
        ("web@1", 48, None),
        ("wiki@1", 40, None),
    }
    assert sorted(p.name for p in work.iterdir()) == listing
    assert (work / "catalog.duckdb").read_bytes() == catalog_bytes


def test_ids_urls_a_request_file_and_an_added_column(work: Path, cli):
    """Ids reach datasets without a url column; an added column is filtered with its shards."""
    catalog = Catalog(work / "catalog.duckdb")
    books = catalog.get("books@1")
    folder = work / "books" / "_columns" / "number-0"
    folder.mkdir(parents=True)
    files, first = [], 0
    for shard in books.shards:
        values = pa.table({"number": pa.array(np.arange(first, first + shard.documents) * 1.0)})
        pq.write_table(values, folder / f"{shard.stem}.parquet")
        data = (folder / f"{shard.stem}.parquet").read_bytes()
        digest = f"xxh3_128:{xxhash.xxh3_128_hexdigest(data)}"
        files.append(ColumnFile(f"{shard.stem}.parquet", len(data), digest, shard.documents))
        first += shard.documents
    (folder / "_manifest.json").write_text(json.dumps({"kind": "annotate", "parents": []}))
    column = AddedColumn("number", "DOUBLE", str(folder), tuple(files), "books@1")
    assert catalog.add_column(books, column)[0].ref == "books@2"
    (work / "request.txt").write_text(
        "# TICKET-7, by letter\n"
        "id books-1-3\n"
        "id books-1-5   # a comment after it\n"
        "url https://other.org/1\n"  # a prefix: 1, 10-19, 100-199...
        "\n"
    )
    code, out, err = cli(
        "takedown", "--file", "request.txt", "--reference", "TICKET-7", "--output", "cleaned",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert sorted(p.name for p in (work / "cleaned").iterdir()) == [
        "books-takedown-3",
        "web-takedown-2",
    ]
    web_gone = [
        n for n in range(SIZES["web"]) if (web_url(n) or "").startswith("https://other.org/1")
    ]
    assert {d["from"]: d["documents"] for d in report["datasets"]} == {
        "books@2": 2,
        "web@1": len(web_gone),
    }
    new = catalog.get("books")
    assert new.ref == "books@3" and [c.name for c in new.added] == ["number"]
    assert new.uri == str(work / "cleaned" / "books-takedown-3")
    assert new.added[0].folder == str(
        work / "cleaned" / "books-takedown-3" / "_columns" / "number-0"
    )
    selection = catalog.select("number >= 0", ["books@3"])
    assert selection.documents == SIZES["books"] - 2
    meta = pq.read_table(new.meta_urls()).column("id").to_pylist()
    numbers = pq.read_table([url for _, urls in new.added_sources() for url in urls])
    assert [f"books-1-{int(n)}" for n in numbers.column("number").to_pylist()] == meta
    assert "books-1-3" not in meta and "books-1-5" not in meta
    # The column's untouched file is the old one, its affected ones rewritten.
    assert (Path(new.added[0].folder) / "shard-00000-000.parquet").stat().st_ino != (
        folder / "shard-00000-000.parquet"
    ).stat().st_ino
    assert (Path(new.added[0].folder) / "shard-00000-001.parquet").stat().st_ino == (
        folder / "shard-00000-001.parquet"
    ).stat().st_ino
    code, out, _ = cli("lineage", "books@3")
    assert "takedown td-" in out and "TICKET-7" in out
    # books@1, older than the version the takedown replaced, may hold what it removed.
    (work / "old.yaml").write_text(yaml.safe_dump(mixture(datasets=["books@1", "web"])))
    code, out, _ = cli("catalog", "check", "old.yaml")
    assert code == 1
    assert "old.yaml: books@1 is older than books@2, which takedown td-" in out
    assert "may hold the documents it removed: move to books@3" in out


BAD_LINES = [
    ("domain example.com\nhost example.com\n", 2, "expected 'domain NAME'"),
    ("url example.com/page\n", 1, "is not a URL"),
    ("# a comment\ndomain https://example.com\n", 2, "is not a domain"),
    ("id\n", 1, "expected 'domain NAME'"),
]


def test_a_bad_request_file_line_is_named(work: Path, cli):
    for content, line, problem in BAD_LINES:
        (work / "bad.txt").write_text(content)
        code, out, err = cli("takedown", "--file", "bad.txt", "--reference", "T-1")
        assert code == 2 and out == ""
        assert f"bad.txt line {line}:" in err and problem in err, err
    assert [v.ref for v in Catalog(work / "catalog.duckdb").latest()] == [
        "books@1",
        "web@1",
        "wiki@1",
    ]


def test_a_takedown_that_matches_nothing_changes_nothing(work: Path, cli):
    listing = sorted(p.name for p in work.iterdir())
    code, out, err = cli(
        "takedown", "--domain", "xample.com", "--url", "https://example.com/", "--id", "web-1",
        "--reference", "T-2",
    )  # fmt: skip
    assert code == 0, err
    assert "removed 0 documents" in out and "nothing matched" in out
    assert sorted(p.name for p in work.iterdir()) == listing
    code, out, _ = cli("catalog", "check")
    assert code == 0 and "no takedowns" in out
    # Nor does one that would empty a dataset: refused before anything is written.
    code, out, err = cli(
        "takedown", "--domain", "wiki.org", "--domain", "example.com", "--domain", "example.org",
        "--reference", "T-3",
    )  # fmt: skip
    assert code == 2 and "wiki@1: the takedown would remove all 120 documents" in err
    assert sorted(p.name for p in work.iterdir()) == listing
    # Image-text samples are not rewritten: a takedown that names one is refused.
    from mixplane.load.images.synthetic import write_image_dataset

    write_image_dataset(str(work / "pics"), samples=4, source="pics", shards=1)
    Catalog(work / "catalog.duckdb").register(str(work / "pics"), name="pics")
    code, out, err = cli("takedown", "--id", "pics-0000003", "--id", "web-1-0", "--reference", "T")
    assert code == 2 and "pics@1: 1 image-text samples match the takedown" in err
    assert not list(work.glob("*-takedown-*"))


def test_a_version_registered_meanwhile_stops_the_takedown(work: Path, monkeypatch):
    """web@2 registered while the takedown writes: nothing is registered or recorded (wiki
    neither: one transaction), and running it again applies it to web@2."""
    from mixplane.catalog.takedown import TakedownRequest, apply, apply_takedown

    catalog = Catalog(work / "catalog.duckdb")
    written = apply.write_version

    def write_and_register(plan, *args):
        if plan.version.name == "wiki":
            catalog.register(str(work / "books"), name="web")
        return written(plan, *args)

    monkeypatch.setattr(apply, "write_version", write_and_register)
    request = TakedownRequest.build(domains=["example.com"], reference="T-4")
    with pytest.raises(MixplaneError, match=r"web@2 was registered while web@1 was being changed"):
        apply_takedown(catalog, request)
    assert [v.ref for v in catalog.latest()] == ["books@1", "web@2", "wiki@1"]
    monkeypatch.undo()
    result = apply_takedown(catalog, request)
    assert [(d["from"], d["to"]) for d in result.datasets] == [("wiki@1", "wiki@2")]


def test_a_pinned_replaced_version_is_flagged(work: Path, cli, caplog):
    code, out, err = cli("takedown", "--domain", "example.com", "--reference", "T-5", "--json")
    assert code == 0, err
    request = json.loads(out)["request"]
    pinned = work / "pinned.yaml"
    pinned.write_text(yaml.safe_dump(mixture(datasets=["web@1", "wiki@2", "books"])))
    # The loader warns, names the request and the version to move to, and still reads web@1.
    with pytest.warns(
        SupersededVersionWarning,
        match=rf"web@1 was superseded by takedown {request} \(reference T-5.*move to web@2",
    ):
        dataset = MixtureDataset(str(pinned))
    assert [info["dataset"] for info in dataset.resolved.datasets] == ["books@1", "web@1", "wiki@2"]
    logged = [r for r in caplog.records if r.name == "mixplane.load.resolve.takedowns"]
    assert [r.levelname for r in logged] == ["WARNING"] and "web@1" in logged[0].getMessage()
    # Another rank starting from the cached plan warns as well, without opening the
    # catalog (here held by a writer, as during a registration).
    import duckdb

    held = duckdb.connect(str(work / "catalog.duckdb"))
    try:
        with pytest.warns(SupersededVersionWarning, match=r"web@1 was superseded"):
            MixtureDataset(str(pinned), rank=1, world_size=2)
    finally:
        held.close()
    # ... or refuses, when the mixture says so.
    strict = mixture(datasets=["web@1"], takedowns="refuse")
    with pytest.raises(MixplaneError, match=r"web@1 was superseded .* takedowns: refuse"):
        MixtureDataset(strict)
    # Following the latest versions, or pinning them: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", SupersededVersionWarning)
        MixtureDataset(mixture(datasets=["web@2", "wiki", "books@1"]))

    code, out, _ = cli("catalog", "check", "mixture.yaml", "pinned.yaml", "--json")
    found = json.loads(out)
    assert code == 1
    assert [(s["pin"], s["move_to"]) for s in found["superseded"]] == [
        ("web@1", "web@2"),
        ("wiki@1", "wiki@2"),
    ]
    assert [(p["pin"], p["mixture"], p["takedown"]["reference"]) for p in found["pinned"]] == [
        ("web@1", "pinned.yaml", "T-5")
    ]
    code, out, _ = cli("catalog", "check", "mixture.yaml")
    assert code == 0 and "web@1" in out and "no mixture given pins a replaced version" in out
    code, out, _ = cli("catalog", "check", "pinned.yaml")
    assert code == 1 and f"pinned.yaml: web@1 was superseded by takedown {request}" in out

    assert found["reappeared"] == []

    # Data registered after the takedown holds its documents again: the check finds them,
    # and the same request takes them down.
    Catalog(work / "catalog.duckdb").register(str(work / "wiki"), name="wiki")  # wiki@3
    code, out, _ = cli("catalog", "check", "mixture.yaml", "--json")
    assert code == 1
    assert json.loads(out)["reappeared"] == [
        {
            "request": request,
            "reference": "T-5",
            "dataset": "wiki@3",
            "documents": 40,
            "tokens": 40 * DOC_TOKENS,
        }
    ]
    code, out, _ = cli("catalog", "check", "mixture.yaml")
    assert f"reappeared: wiki@3 holds 40 documents takedown {request} (reference T-5)" in out
    code, out, err = cli("takedown", "--domain", "example.com", "--reference", "T-5")
    assert code == 0 and "wiki@3 -> wiki@4" in out, err
    code, out, _ = cli("catalog", "check", "mixture.yaml", "--json")
    assert code == 0 and json.loads(out)["reappeared"] == []

    # A second takedown: the pin moves to the end of the chain.
    code, _, err = cli("takedown", "--url", "https://other.org/2", "--reference", "T-6")
    assert code == 0, err
    code, out, _ = cli("catalog", "check", "pinned.yaml", "--json")
    # (wiki@2 too now: it is older than wiki@3, which the takedown made again replaced.)
    assert [(p["pin"], p["move_to"], p["direct"]) for p in json.loads(out)["pinned"]] == [
        ("web@1", "web@3", True),
        ("wiki@2", "wiki@4", False),
    ]


def test_the_check_fails_until_gc_removes_what_a_takedown_replaced(work: Path, cli):
    code, _, err = cli("takedown", "--domain", "example.com", "--reference", "T-9")
    assert code == 0, err
    code, out, _ = cli("catalog", "check", "--json")
    assert code == 1  # web@1 and wiki@1 still hold the removed documents on disk
    assert {(s["pin"], s["collected"]) for s in json.loads(out)["superseded"]} == {
        ("web@1", None),
        ("wiki@1", None),
    }
    assert "mixplane gc" in cli("catalog", "check")[1]
    code, out, err = cli("gc", "--keep-latest", "1", "--delete")
    assert code == 0, err
    code, out, _ = cli("catalog", "check", "--json")
    assert code == 0
    assert all(s["collected"] for s in json.loads(out)["superseded"])
    assert "removed by gc on" in cli("catalog", "check")[1]


def test_a_plan_from_the_service_carries_the_warning_to_the_rank(work: Path, cli):
    code, _, err = cli("takedown", "--domain", "example.com", "--reference", "T-10")
    assert code == 0, err
    service = Service(work / "catalog.duckdb", "--cache-dir", str(work / "service-cache"))
    try:
        served = {"plan_url": service.url, "cache_dir": str(work / "rank-cache")}
        pinned = mixture(datasets=["web@1", "wiki", "books@1"], **served)
        with pytest.warns(SupersededVersionWarning, match=r"web@1 was superseded .*T-10"):
            MixtureDataset(pinned).close()
        posted = {k: v for k, v in pinned.items() if k not in ("catalog", *served)}
        answer = service.post("/api/plans", {"mixture": posted})
        assert [m.split(" was ")[0] for m in answer.json()["superseded"]] == ["web@1"]
        with pytest.raises(MixplaneError, match="takedowns: refuse"):
            MixtureDataset(pinned | {"takedowns": "refuse"})
        with warnings.catch_warnings():  # following the latest versions: nothing to say
            warnings.simplefilter("error", SupersededVersionWarning)
            MixtureDataset(mixture(datasets=["web", "wiki", "books"], **served)).close()
    finally:
        service.stop()


def test_a_catalog_from_before_takedowns_opens_read_only(work: Path, cli):
    (work / "catalog.duckdb").chmod(0o444)
    code, out, _ = cli("catalog", "check")
    assert code == 0 and "no takedowns" in out
    with warnings.catch_warnings():
        warnings.simplefilter("error", SupersededVersionWarning)
        MixtureDataset(mixture(datasets=["web@1", "wiki@1", "books@1"]))


def test_a_takedown_on_object_storage(s3_bucket, tmp_path: Path):
    """Data and catalog in a bucket: shards without matches are copied by the store (the
    same bytes), the others rewritten, the catalog updated in place."""
    import s3fs

    from mixplane.catalog.takedown import Progress, TakedownRequest, apply_takedown

    bucket, options = s3_bucket
    fs = s3fs.S3FileSystem(**options)
    root = f"s3://{bucket}"
    catalog = Catalog(f"{root}/catalog.duckdb", storage_options=options)
    write_dataset(f"{root}/web", "web", options)
    catalog.register(f"{root}/web", name="web")
    request = TakedownRequest.build(domains=["example.com"], reference="T-S3")
    planned, rewritten = [], []
    result = apply_takedown(catalog, request, progress=Progress(planned.append, rewritten.append))
    assert [(d["from"], d["to"]) for d in result.datasets] == [("web@1", "web@2")]
    assert planned == [2] and rewritten == ["shard-00000-002", "shard-00000-003"]
    fs.get(f"{bucket}/catalog.duckdb", str(tmp_path / "copy.duckdb"))
    web = Catalog(tmp_path / "copy.duckdb").get("web")
    assert web.ref == "web@2" and web.uri == f"{root}/web-takedown-2"
    for shard in range(6):
        stem = f"shard-00000-{shard:03d}.bin"
        old, new = fs.cat(f"{bucket}/web/{stem}"), fs.cat(f"{bucket}/web-takedown-2/{stem}")
        assert (old == new) == (shard in (0, 1, 4, 5)), stem
    metas = [f"{bucket}/web-takedown-2/{shard.stem}.meta.parquet" for shard in web.shards]
    ids = pq.read_table(metas, filesystem=fs).column("id").to_pylist()
    kept = [n for n in range(SIZES["web"]) if not taken_down("web", n)]
    assert ids == [f"web-1-{n}" for n in kept]
    local = TokenizedDataset(web.uri, options, cache_dir=str(tmp_path / "shards"))
    local.verify()
    assert apply_takedown(catalog, request).datasets == []  # again: nothing left to remove


def test_a_rewritten_shard_keeps_the_loss_masks_of_its_documents(tmp_path: Path):
    """Fine-tuning shards (format version 2): the kept documents' tokens, masks and
    metadata are the old ones, in order, and the shard is what the writer writes."""
    from mixplane.catalog.takedown.rewrite import filter_shard
    from mixplane.store import ShardReader
    from mixplane.store.writer import TaskShardWriter

    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 30, 50)
    tokens = rng.integers(1, 1000, int(lengths.sum())).astype(np.uint16)
    mask = rng.integers(0, 2, len(tokens)).astype(np.uint8)
    meta = pa.table({"id": [f"c-{i}" for i in range(50)], "source": ["chat"] * 50})
    writer = TaskShardWriter(str(tmp_path / "old"), 0, np.uint16, 1 << 20, masked=True)
    writer.add(tokens, lengths, meta, mask)
    writer.close()
    old = ShardReader(tmp_path / "old" / "shard-00000-000")
    drop = np.array([0, 7, 8, 49])
    record = filter_shard(old, old.metadata(), drop, str(tmp_path / "new"))
    new = ShardReader(tmp_path / "new" / "shard-00000-000")
    kept = [i for i in range(50) if i not in drop]
    assert new.version == 2 and record.documents == len(new) == len(kept)
    assert new.metadata().column("id").to_pylist() == [f"c-{i}" for i in kept]
    for place, i in enumerate(kept):
        assert np.array_equal(new.document(place), old.document(i))
        assert np.array_equal(new.document_mask(place), old.document_mask(i))
    assert record.files["mask"]["size"] == new.n_tokens
    new.verify({"shards": [record.to_json()]})
    # Copied in batches of about 37 tokens: the same bytes.
    batched = filter_shard(old, old.metadata(), drop, str(tmp_path / "small"), batch_tokens=37)
    assert batched.files == record.files


@pytest.mark.skipif(
    not Path("/dev/shm").is_dir()
    or os.stat("/dev/shm").st_dev == os.stat(tempfile.gettempdir()).st_dev,
    reason="needs a second local filesystem (/dev/shm)",
)
def test_a_file_carried_to_another_filesystem_is_copied(tmp_path: Path):
    from mixplane.catalog.takedown.rewrite import carry_file

    source = tmp_path / "shard-00000-000.bin"
    source.write_bytes(b"\x01\x02" * 100)
    other = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        carry_file(str(source), str(other / "new" / source.name), None)
        carried = other / "new" / source.name
        assert carried.read_bytes() == source.read_bytes()
        assert carried.stat().st_ino != source.stat().st_ino
    finally:
        shutil.rmtree(other)
