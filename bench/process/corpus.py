"""A small crawl for the FineWeb-style chain: real HTML pages from Debian documentation
packages, wrapped into gzipped WARC response records as a crawler would write them.

The pages are the HTML manuals of Python, PostgreSQL and Git (`apt-get install python3-doc
postgresql-doc-15 git-doc`), each given the URL it has on its project's site. On top of them:

- mirrors: a share of the pages again, under mirror hosts, with a mirror banner and a
  changed line, so that near-duplicate removal has work;
- blocked URLs: a share of the pages under domains drawn from the URL block list, or with a
  banned word or two soft-banned words in the path, so that the URL filter has work.

Everything is decided by the seed: the same arguments give the same records (ids are
derived from the URL, dates are fixed), so both tools read identical files.

Example:
    build_warcs(Path("bench/data/process/warc"), pages=2000, files=2, lists=lists)
"""

from __future__ import annotations

import gzip
import io
import random
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

DEBIAN_PACKAGES = ["python3-doc", "postgresql-doc-15", "git-doc"]
# Where each package's HTML lies, and the site its pages come from.
SITES = [
    ("/usr/share/doc/python3.11/html", "https://docs.python.org/3.11/"),
    ("/usr/share/doc/postgresql-doc-15/html", "https://www.postgresql.org/docs/15/"),
    ("/usr/share/doc/git-doc", "https://git-scm.com/docs/"),
]
MIRRORS = ["https://mirror.docs-archive.net/", "https://www.manuals-mirror.org/"]
WARC_DATE = "2026-01-15T00:00:00Z"


@dataclass(frozen=True)
class UrlLists:
    """Entries the chain's URL filter blocks, to draw blocked URLs from."""

    domains: list[str]
    banned_words: list[str]
    soft_banned_words: list[str]


@dataclass(frozen=True)
class Page:
    url: str
    html: bytes
    kind: str  # original, mirror, blocked_domain, banned_word, soft_banned


def install_pages() -> None:
    """Install the documentation packages when their HTML is missing (Debian, as root)."""
    if all(Path(folder).is_dir() for folder, _ in SITES):
        return
    subprocess.run(["apt-get", "install", "-y", "-q", *DEBIAN_PACKAGES], check=True)


def original_pages(max_kb: int) -> list[Page]:
    """Every HTML page of the documentation packages up to `max_kb`, with its site URL."""
    pages = []
    for folder, site in SITES:
        root = Path(folder)
        for path in sorted(root.rglob("*.html")):
            size = path.stat().st_size
            if 0 < size <= max_kb * 1024:
                url = site + path.relative_to(root).as_posix()
                pages.append(Page(url, path.read_bytes(), "original"))
    return pages


def crawl(
    pages: int, lists: UrlLists, seed: int = 0, mirror_share: float = 0.2,
    blocked_share: float = 0.06, max_kb: int = 120,
) -> list[Page]:  # fmt: skip
    """`pages` originals drawn from the packages, plus their mirrors and blocked copies,
    shuffled."""
    rng = random.Random(seed)
    found = original_pages(max_kb)
    chosen = rng.sample(found, min(pages, len(found)))
    crawled = list(chosen)
    for page in rng.sample(chosen, int(len(chosen) * mirror_share)):
        crawled.append(_mirror(page, rng))
    for page in rng.sample(chosen, int(len(chosen) * blocked_share)):
        crawled.append(_blocked(page, lists, rng))
    rng.shuffle(crawled)
    return crawled


def _mirror(page: Page, rng: random.Random) -> Page:
    mirror = rng.choice(MIRRORS)
    path = page.url.split("://", 1)[1]
    banner = f'<div class="mirror"><p>Mirrored copy of {page.url}, updated weekly.</p></div>'
    html = page.html.replace(b"<body", banner.encode() + b"<body", 1)
    # A changed line: near, not exact, duplicates.
    html = html.replace(b"</p>", b" (mirror)</p>", 1)
    return Page(mirror + path, html, "mirror")


def _blocked(page: Page, lists: UrlLists, rng: random.Random) -> Page:
    path = page.url.split("://", 1)[1].split("/", 1)[1]
    kind = rng.choice(["blocked_domain", "blocked_domain", "banned_word", "soft_banned"])
    if kind == "blocked_domain":
        url = f"https://{rng.choice(lists.domains)}/{path}"
    elif kind == "banned_word":
        url = f"https://pages.example-host.net/{rng.choice(lists.banned_words)}/{path}"
    else:
        first, second = rng.sample(lists.soft_banned_words, 2)
        url = f"https://pages.example-host.net/{first}-{second}/{path}"
    return Page(url, page.html, kind)


def write_warcs(folder: Path, crawled: list[Page], files: int) -> list[Path]:
    """Gzipped WARC files of response records (HTTP headers included), pages dealt round
    robin."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"crawl-{i:02d}.warc.gz" for i in range(files)]
    for i, path in enumerate(paths):
        with open(path, "wb") as out:
            writer = WARCWriter(out, gzip=True)
            for page in crawled[i::files]:
                writer.write_record(_record(writer, page))
    return paths


def _record(writer: WARCWriter, page: Page):
    http = StatusAndHeaders(
        "200 OK",
        [("Content-Type", "text/html; charset=utf-8"), ("Server", "nginx")],
        protocol="HTTP/1.1",
    )
    headers = {
        "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, page.url)}>",
        "WARC-Date": WARC_DATE,
        "WARC-Identified-Payload-Type": "text/html",
    }
    return writer.create_warc_record(
        page.url, "response", payload=io.BytesIO(page.html), http_headers=http,
        warc_headers_dict=headers,
    )  # fmt: skip


def write_list(path: Path, entries: list[str]) -> Path:
    """A list file, gzipped when its name ends in .gz."""
    data = "".join(f"{entry}\n" for entry in entries).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    return path
