"""Lists of input files, one path or URL a line, as Common Crawl publishes them
(`warc.paths.gz`, `wet.paths.gz`: gzip-compressed, entries relative to the crawl's host).

Example:
    >>> resolve_entries(["crawl-data/a.warc.gz", "", "s3://b/c.warc.gz"],
    ...                 "https://data.commoncrawl.org/", "warc.paths")
    ['https://data.commoncrawl.org/crawl-data/a.warc.gz', 's3://b/c.warc.gz']
"""

from __future__ import annotations

import gzip
from typing import Any

from mixplane.errors import InputError
from mixplane.io.urls import open_url


def read_path_list(
    url: str, base: str | None, storage_options: dict[str, Any] | None = None
) -> list[str]:
    """The files a list names, in its order, relative entries joined to `base`.

    The list may be gzip-compressed whatever its name says (Common Crawl's are); blank
    lines and lines starting with `#` are skipped.
    """
    with open_url(url, "rb", storage_options) as handle:
        data = handle.read()
    if data[:2] == b"\x1f\x8b":  # a gzip list named without .gz, or gzip inside gzip
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise InputError(f"paths list {url!r} is not readable gzip: {error}") from None
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise InputError(f"paths list {url!r} is not UTF-8 text: {error}") from None
    entries = resolve_entries(lines, base, url)
    if not entries:
        raise InputError(f"paths list {url!r} names no file")
    return entries


def resolve_entries(lines: list[str], base: str | None, where: str) -> list[str]:
    """Each non-blank, non-comment line as a URL: kept when it is one (or an absolute
    path), else joined to `base`; a relative entry without a base is an error."""
    entries = []
    for number, line in enumerate(lines, 1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        if "://" in entry or entry.startswith("/"):
            entries.append(entry)
        elif base:
            entries.append(base.rstrip("/") + "/" + entry.removeprefix("./"))
        else:
            raise InputError(
                f"{where} line {number}: {entry!r} is a relative path; set 'base' on the input "
                "to the prefix it is relative to (for Common Crawl: https://data.commoncrawl.org/ "
                "or s3://commoncrawl/)"
            )
    return entries
