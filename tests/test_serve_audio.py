"""The service's audio route, `/api/audio/{dataset}/{shard}/{index}`, over real audio shards
and a real `mixplane serve` process: the stored clip's bytes, typed, in ranges as a browser's
player asks for them, behind the same guard as every data route."""

from __future__ import annotations

import httpx
import pytest
from conftest import Service

from mixplane.catalog import Catalog
from mixplane.serve import clips
from mixplane.serve.ranges import RangeNotSatisfiable, requested_range
from mixplane.store.audio import AudioShardReader

TOKEN = "audio-test-token-0123456789"
CLIP = "/api/audio/speech@1/part-00000/"


@pytest.fixture(scope="module")
def audio_service(audio_site, tmp_path_factory):
    """`mixplane serve` with a token over the text, image and audio datasets."""
    cache = tmp_path_factory.mktemp("audio-cache")
    service = Service(audio_site / "catalog.duckdb", "--cache-dir", str(cache), token=TOKEN)
    yield service
    service.stop()


@pytest.fixture(scope="module")
def stored(audio_site) -> list[bytes]:
    """Each sample's clip, as the shard holds it (read without the service)."""
    version = Catalog(audio_site / "catalog.duckdb").get("speech@1")
    reader = AudioShardReader(version.uri, "part-00000")
    return [reader.sample(i).get("flac", reader.sample(i).get("wav")) for i in range(len(reader))]


def get(service: Service, path: str, **headers: str) -> httpx.Response:
    return httpx.get(service.url + path, headers=service.headers | headers, timeout=60)


def test_documents_name_their_clip_and_it_is_the_stored_one(audio_service, stored):
    page = audio_service.get("/api/samples", datasets="speech", k=12).json()["samples"]
    assert [sample["audio"] for sample in page] == [f"{CLIP}{i}" for i in range(12)]
    assert all(sample["thumbnail"] is None for sample in page)
    for i, sample in enumerate(page):
        answer = get(audio_service, sample["audio"])
        assert answer.status_code == 200, answer.text
        assert answer.content == stored[i]
        assert answer.headers["content-type"] == ("audio/wav" if i == 11 else "audio/flac")
        assert answer.headers["accept-ranges"] == "bytes"
        assert answer.headers["cache-control"] == "private, max-age=86400"
        assert sample["properties"]["audio_bytes"] == len(stored[i])
    document = audio_service.get(f"{CLIP}3".replace("/audio/", "/documents/")).json()
    assert document["audio"] == f"{CLIP}3" and document["text"] == "tone number 3 at 340 hertz"
    latest = get(audio_service, "/api/audio/speech/part-00000/3")
    assert latest.content == stored[3] and latest.headers["cache-control"] == "private, no-cache"
    for other in ("demo", "images"):
        sample = audio_service.get("/api/samples", datasets=other, k=1).json()["samples"][0]
        assert sample["audio"] is None


@pytest.mark.parametrize(
    ("header", "status", "part"),
    [
        ("bytes=0-99", 206, slice(0, 100)),
        ("bytes=100-", 206, slice(100, None)),
        ("bytes=-64", 206, slice(-64, None)),
        ("bytes=0-99999999", 206, slice(0, None)),  # the end is cut to the clip's
        ("bytes=-99999999", 206, slice(0, None)),
        ("BYTES=5-5", 206, slice(5, 6)),
        ("bytes=99999999-", 416, None),
        ("bytes=-0", 416, None),
        ("bytes=0-1,5-6", 200, slice(None)),  # several ranges: the whole clip
        ("bytes=5-1", 200, slice(None)),  # malformed: ignored
        ("bytes=abc", 200, slice(None)),
        ("bytes=", 200, slice(None)),
        ("bytes 0-1", 200, slice(None)),
        ("items=0-1", 200, slice(None)),
        ("bytes=0x10-20", 200, slice(None)),
        ("bytes=-", 200, slice(None)),
    ],
)
def test_range_requests(audio_service, stored, header, status, part):
    answer = get(audio_service, f"{CLIP}5", Range=header)
    size = len(stored[5])
    assert answer.status_code == status, (header, answer.text)
    if status == 416:
        assert answer.headers["content-range"] == f"bytes */{size}"
        assert answer.headers["content-type"] == "application/json"
        return
    assert answer.content == stored[5][part]
    assert answer.headers["content-type"] == "audio/flac"
    if status == 206:
        start = part.indices(size)[0]
        end = start + len(answer.content) - 1
        assert answer.headers["content-range"] == f"bytes {start}-{end}/{size}"
        assert int(answer.headers["content-length"]) == len(answer.content)
    else:
        assert "content-range" not in answer.headers


def test_if_range_gets_the_whole_clip(audio_service, stored):
    """The service gives no validator, so none an If-Range names can match."""
    answer = get(audio_service, f"{CLIP}5", Range="bytes=0-9", **{"If-Range": '"x"'})
    assert answer.status_code == 200 and answer.content == stored[5]


def test_ranges_are_read_as_rfc_9110_says():
    assert requested_range(None, 10) is None
    assert requested_range("bytes=0-0", 10) == (0, 1)
    assert requested_range("bytes=9-", 10) == (9, 10)
    assert requested_range("bytes=-10", 10) == (0, 10)
    assert requested_range("bytes=2-4, ,", 10) == (2, 5)  # empty list elements are ignored
    assert requested_range(" bytes=2-4 ", 10) == (2, 5)
    assert requested_range("bytes=1-2,3-4", 10) is None
    assert requested_range("bytes=1-2,x", 10) is None
    assert requested_range("bytes=+1-2", 10) is None
    assert requested_range("bytes=1 - 2", 10) is None
    for unsatisfiable in ("bytes=10-", "bytes=10-20", "bytes=-0"):
        with pytest.raises(RangeNotSatisfiable):
            requested_range(unsatisfiable, 10)
    with pytest.raises(RangeNotSatisfiable):
        requested_range("bytes=-5", 0)


@pytest.mark.parametrize(
    "path",
    [
        "/api/audio/demo@1/shard-00000-000/0",  # a dataset of tokens
        "/api/audio/images@1/part-00000/0",  # of images
        "/api/audio/speech@1/part-00000/12",
        "/api/audio/speech@1/part-99999/0",
        "/api/audio/speech@9/part-00000/0",
        "/api/audio/nothing/part-00000/0",
        "/api/audio/speech@1/..%2F..%2Fcatalog/0",
        "/api/audio/speech@1/..%2Fspeech%2Fpart-00000/0",
        "/api/audio/speech@1/%2Fetc%2Fpasswd/0",
        "/api/audio/..%2Fspeech/part-00000/0",
        "/api/audio/speech@1/part-00000/-1",
        "/api/audio/speech@1/part-00000/x",
    ],
)
def test_audio_paths_are_checked_against_the_catalog(audio_service, path):
    answer = get(audio_service, path)
    assert answer.status_code in (404, 422), (path, answer.status_code)
    assert answer.headers["content-type"] == "application/json"
    assert not answer.content.startswith(b"fLaC")


def test_a_version_without_audio_is_named(audio_service):
    for path, ref, what in (
        ("demo@1/shard-00000-000/0", "demo@1", "audio"),
        ("images/part-00000/0", "images@1", "audio"),
    ):
        answer = get(audio_service, f"/api/audio/{path}")
        assert answer.status_code == 404
        assert answer.json()["detail"] == f"{ref} holds no {what}"
    answer = get(audio_service, f"{CLIP}12")
    assert answer.json()["detail"] == "speech@1 part-00000 has 12 documents"


def test_the_guard_stands_before_the_clips(audio_service):
    url = audio_service.url + f"{CLIP}0"
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-Mixplane-Token": ""}):
        answer = httpx.get(url, headers=headers | {"Range": "bytes=0-3"})
        assert answer.status_code == 401 and b"fLaC" not in answer.content
    assert httpx.get(url, headers={"X-Mixplane-Token": TOKEN}).status_code == 200
    forged = audio_service.headers | {"Host": "evil.example:8000"}
    answer = httpx.get(url, headers=forged)
    assert answer.status_code == 400 and "Host header" in answer.json()["detail"]
    # And the page's policy lets media come from the service only.
    policy = httpx.get(url, headers=audio_service.headers).headers["content-security-policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["media-src"] == "'self' blob:"


def test_head_and_other_methods(audio_service, stored):
    url = audio_service.url + f"{CLIP}2"
    head = httpx.head(url, headers=audio_service.headers)
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(stored[2])
    assert head.headers["content-type"] == "audio/flac"
    part = httpx.head(url, headers=audio_service.headers | {"Range": "bytes=-10"})
    assert part.status_code == 206 and part.content == b""
    assert (
        part.headers["content-range"]
        == f"bytes {len(stored[2]) - 10}-{len(stored[2]) - 1}/{len(stored[2])}"
    )
    for method in ("POST", "PUT", "DELETE", "PATCH", "BREW", "PROPFIND"):
        answer = httpx.request(method, url, headers=audio_service.headers)
        assert answer.status_code == 405, method
        assert answer.headers["allow"] == "GET, HEAD", method
        assert answer.headers["content-type"] == "application/json"
    assert httpx.request("BREW", url).status_code == 401  # no token: nothing learnt


def test_oversized_samples_are_refused_by_name(audio_site, monkeypatch):
    catalog = Catalog(audio_site / "catalog.duckdb")
    with pytest.raises(clips.NoClip, match="part-00000 sample 0 holds no audio clip"):
        clips.sample_clip(catalog.get("images@1").uri, "part-00000", 0)
    monkeypatch.setattr(clips, "MAX_CLIP_BYTES", 512)
    with pytest.raises(clips.NoClip, match="sends clips of samples up to 512 bytes"):
        clips.sample_clip(catalog.get("speech@1").uri, "part-00000", 0)
