"""fetch_images against a real loopback HTTP server: images, errors, retries, timeouts,
redirects, X-Robots-Tag, size limits and the per-host limit on requests in flight."""

from __future__ import annotations

import io
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from PIL import Image

from mixplane.document import Document, Drop
from mixplane.process.pipeline import run_pipeline
from mixplane.stages.image.fetch import FetchImages


def encoded(fmt: str, color: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), color).save(buffer, fmt)
    return buffer.getvalue()


PNG, JPEG = encoded("PNG"), encoded("JPEG", "blue")


class Server:
    """A threaded HTTP server whose paths choose the answer; it counts requests per path
    and the most requests it ever had in flight at once."""

    def __init__(self) -> None:
        self.hits: Counter[str] = Counter()
        self.agents: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                with server.lock:
                    server.hits[self.path] += 1
                    server.agents.append(self.headers.get("User-Agent", ""))
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    server.answer(self)
                finally:
                    with server.lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path
        if path.startswith("/png/") or path.startswith("/hold/"):
            if path.startswith("/hold/"):
                time.sleep(0.15)
            self.send(handler, 200, PNG, "image/png")
        elif path == "/photo":  # no suffix: the Content-Type names the format
            self.send(handler, 200, JPEG, "image/jpeg")
        elif path == "/photo.jpg/octet":
            self.send(handler, 200, JPEG, "application/octet-stream")
        elif path == "/missing.png":
            self.send(handler, 404, b"not here", "text/plain")
        elif path == "/forbidden.png":
            self.send(handler, 403, b"no", "text/plain")
        elif path.startswith("/flaky/"):  # 500 on the first request, then the image
            if self.hits[path] == 1:
                self.send(handler, 500, b"oops", "text/plain")
            else:
                self.send(handler, 200, PNG, "image/png")
        elif path == "/down.png":
            self.send(handler, 503, b"down", "text/plain")
        elif path == "/slow.png":
            time.sleep(1.5)
            self.send(handler, 200, PNG, "image/png")
        elif path == "/redirect":
            self.send(handler, 302, b"", "text/plain", {"Location": "/png/target.png"})
        elif path == "/loop":
            self.send(handler, 302, b"", "text/plain", {"Location": "/loop"})
        elif path == "/noai.png":
            self.send(handler, 200, PNG, "image/png", {"X-Robots-Tag": "noai, noimageai"})
        elif path == "/otherbot.png":
            self.send(handler, 200, PNG, "image/png", {"X-Robots-Tag": "otherbot: noai"})
        elif path == "/ourbot.png":
            self.send(handler, 200, PNG, "image/png", {"X-Robots-Tag": "testbot: noindex"})
        elif path in ("/gallery.jpg", "/photo.png/page"):  # a page where an image was
            page = b"<!DOCTYPE html><html><head><title>Photo</title></head><body></body></html>"
            self.send(handler, 200, page, "text/html; charset=utf-8")
        elif path == "/data.json":
            self.send(handler, 200, b'{"image": null}', "application/json")
        elif path == "/blob":  # untyped bytes that are no image: decoding will say so
            self.send(handler, 200, b"\x00\x01 random bytes", "application/octet-stream")
        elif path == "/big.png":
            self.send(handler, 200, PNG + bytes(5000), "image/png")
        else:
            self.send(handler, 404, b"", "text/plain")

    @staticmethod
    def send(handler, status: int, body: bytes, kind: str, headers: dict | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(body)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    running = Server()
    yield running
    running.stop()


def docs_for(base: str, paths: list[str]) -> list[Document]:
    return [
        Document(f"d{i}", f"caption {i}", "web", {"url": base + path})
        for i, path in enumerate(paths)
    ]


def test_outcomes_per_sample(server: Server):
    paths = [
        "/png/a.png",
        "/photo",
        "/photo.jpg/octet",
        "/missing.png",
        "/forbidden.png",
        "/flaky/1.png",
        "/redirect",
        "/loop",
        "/noai.png",
        "/otherbot.png",
        "/ourbot.png",
        "/big.png",
    ]
    stage = FetchImages(
        backoff=0.05, max_bytes=4000, user_agent="testbot/2.0", user_agent_token="testbot"
    )
    docs = docs_for(server.url, paths) + [Document("x", "", "web", {"url": "ftp://host/a.png"})]
    results = dict(zip(paths + ["ftp"], stage.apply_batch(docs), strict=True))

    ok = results["/png/a.png"]
    assert isinstance(ok, Document) and ok.media == {"png": PNG}
    assert ok.metadata | {"url": None} == {
        "url": None,
        "fetch_status": "success",
        "http_status": 200,
        "fetch_error": None,
        "content_type": "image/png",
    }
    assert results["/photo"].media == {"jpg": JPEG}  # from the Content-Type
    assert results["/photo.jpg/octet"].media == {"jpg": JPEG}  # from the bytes
    assert results["/flaky/1.png"].media == {"png": PNG}  # retried after the 500
    assert server.hits["/flaky/1.png"] == 2
    assert results["/redirect"].media == {"png": PNG}
    assert results["/otherbot.png"].media == {"png": PNG}  # addressed to another robot

    def drop(path: str) -> Drop:
        result = results[path]
        assert isinstance(result, Drop), path
        return result

    assert drop("/missing.png").reason == "fetch_http_404"
    assert drop("/missing.png").detail["http_status"] == 404
    assert server.hits["/missing.png"] == 1  # a 4xx is not retried
    assert drop("/forbidden.png").reason == "fetch_http_403"
    assert drop("/loop").reason == "fetch_too_many_redirects"
    assert drop("/noai.png").reason == "robots_noai"
    assert "noai" in drop("/noai.png").detail["error"]
    assert drop("/ourbot.png").reason == "robots_noai"
    assert drop("/big.png").reason == "fetch_too_large"
    assert drop("ftp").reason == "fetch_bad_url"
    assert docs[3].metadata["fetch_status"] == "http_404"
    assert docs[3].metadata["fetch_error"].startswith("HTTP 404")
    assert set(server.agents) == {"testbot/2.0"}


def test_retries_then_gives_up_and_timeouts(server: Server):
    stage = FetchImages(timeout=0.5, retries=2, backoff=0.05)
    down, slow = stage.apply_batch(docs_for(server.url, ["/down.png", "/slow.png"]))
    assert down == Drop(
        "fetch_http_503",
        {
            "url": server.url + "/down.png",
            "http_status": 503,
            "error": "HTTP 503 Service Unavailable",
            "content_type": "text/plain",
        },
    )
    assert server.hits["/down.png"] == 3  # the first try and two retries
    assert slow.reason == "fetch_timeout"
    assert server.hits["/slow.png"] == 1  # a slow host is not asked twice


def test_connection_errors_are_retried_then_dropped():
    with socketserver_closed_port() as url:
        (result,) = FetchImages(retries=1, backoff=0.01).apply_batch(docs_for(url, ["/a.png"]))
    assert result.reason == "fetch_error"
    assert result.detail["http_status"] is None


class socketserver_closed_port:
    """A loopback URL on which nothing listens."""

    def __enter__(self) -> str:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc) -> None:
        pass


def test_per_host_limit_and_delay(server: Server):
    paths = [f"/hold/{i}.png" for i in range(12)]
    results = FetchImages(per_host=3).apply_batch(docs_for(server.url, paths))
    assert all(isinstance(r, Document) for r in results)
    assert server.most_in_flight == 3

    server.most_in_flight = 0
    started = time.perf_counter()
    paths = [f"/png/{i}.png" for i in range(5)]
    FetchImages(per_host=4, host_delay=0.1).apply_batch(docs_for(server.url, paths))
    assert time.perf_counter() - started >= 0.4  # five starts, 0.1 s apart


def test_batch_of_512_and_determinism(server: Server):
    paths = [f"/png/{i}.png" for i in range(500)] + ["/missing.png"] * 12
    stage = FetchImages(per_host=32, concurrency=128)
    first = stage.apply_batch(docs_for(server.url, paths))
    again = stage.apply_batch(docs_for(server.url, paths))
    assert [type(r).__name__ for r in first] == ["Document"] * 500 + ["Drop"] * 12
    assert first == again


def test_documents_with_media_or_without_url_pass_untouched(server: Server):
    has_image = Document("a", "", "web", {"url": server.url + "/png/x.png"}, {"jpg": b"x"})
    no_url = Document("b", "", "web", {})
    assert FetchImages().apply_batch([has_image, no_url]) == [has_image, no_url]
    assert not server.hits


def test_pipeline_jsonl_urls_fetch_and_balance(server: Server, tmp_path: Path):
    import json

    import pyarrow.parquet as pq

    lines = [
        {"link": server.url + "/png/1.png", "caption": "one"},
        {"link": server.url + "/missing.png", "caption": "two"},
        {"link": server.url + "/noai.png", "caption": "three"},
    ]
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "urls.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = run_pipeline(
        {
            "input": {"path": str(tmp_path / "raw"), "url_key": "link", "text_key": "caption"},
            "output": str(tmp_path / "out"),
            "stages": [{"fetch_images": {"backoff": 0.01}}],
        }
    )
    stats = result.stats
    assert (stats["documents_in"], stats["kept"], stats["excluded"]) == (3, 1, 2)
    assert stats["documents_in"] == stats["kept"] + stats["excluded"] + stats["quarantined"]
    assert stats["excluded_by"]["fetch_images"] == {"fetch_http_404": 1, "robots_noai": 1}
    kept = pq.read_table(tmp_path / "out" / "part-00000.parquet").to_pylist()
    assert [(r["text"], r["url"], r["fetch_status"]) for r in kept] == [
        ("one", server.url + "/png/1.png", "success")
    ]


def test_an_html_page_with_status_200_is_excluded_naming_its_content_type(
    server: Server, tmp_path: Path
):
    import json

    import pyarrow.parquet as pq

    stage = FetchImages(backoff=0.01)
    page, typed, json_answer, blob = stage.apply_batch(
        docs_for(server.url, ["/gallery.jpg", "/photo.png/page", "/data.json", "/blob"])
    )
    assert page == Drop(
        "fetch_not_image",
        {
            "url": server.url + "/gallery.jpg",
            "http_status": 200,
            "error": "not an image: Content-Type 'text/html; charset=utf-8', 74 bytes "
            "beginning b'<!DOCTYPE html><html><he'",
            "content_type": "text/html",
        },
    )
    assert typed.reason == "fetch_not_image" and json_answer.detail["content_type"] == (
        "application/json"
    )
    assert server.hits["/gallery.jpg"] == 1  # a wrong answer is not retried
    assert blob.media == {"bin": b"\x00\x01 random bytes"}
    assert blob.metadata["content_type"] == "application/octet-stream"

    (tmp_path / "raw").mkdir()
    lines = [{"url": server.url + path, "text": path} for path in ("/gallery.jpg", "/png/a.png")]
    (tmp_path / "raw" / "urls.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = run_pipeline(
        {
            "input": {"path": str(tmp_path / "raw"), "url_key": "url"},
            "output": str(tmp_path / "out"),
            "stages": [{"fetch_images": {}}, {"decode_image": {"drop_blank": False}}],
        }
    )
    assert result.stats["excluded_by"] == {"fetch_images": {"fetch_not_image": 1}}
    row = pq.read_table(tmp_path / "out" / "_excluded").to_pylist()[0]
    assert json.loads(row["detail"])["content_type"] == "text/html"
    assert json.loads(row["metadata"])["content_type"] == "text/html"
