"""Where each source's documents go, and the id the pipeline will give each of them.

Paths are relative to the corpus folder. Ids follow the readers' rules when the pipeline's
input root is `OUT/raw` (for example inputs `OUT/raw/wiki/*.jsonl.zst` and
`OUT/raw/forum/*.parquet` together): records with an `id` field keep it, WARC records use
their WARC-Record-ID, single HTML files are named by their path and Parquet rows without
an id are `NAME#ROW`.
"""

from __future__ import annotations

import datetime
import random
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from mixplane.io.atomic import join_url
from mixplane.synth.documents import Draft
from mixplane.synth.sinks import JsonlSink, ParquetSink, WarcSink, write_text

FILE_NAMES = {
    "web": "raw/web/web-{index:04d}.warc.gz",
    "wiki": "raw/wiki/wiki-{index:04d}.jsonl.zst",
    "code": "raw/code/code-{index:04d}.jsonl.gz",
    "forum": "raw/forum/forum-{index:04d}.parquet",
}
HTML_NAME = "raw/web_html/page-{index:06d}.html"
ID_ROOT = "raw"
FORUM_SCHEMA = pa.schema(
    [
        ("text", pa.string()),
        ("thread_id", pa.string()),
        ("author", pa.string()),
        ("score", pa.int32()),
        ("created", pa.string()),
    ]
)
_EPOCH = datetime.datetime(2015, 1, 1, tzinfo=datetime.timezone.utc)


def record_uuid(rng: random.Random) -> str:
    """A WARC record id drawn from the generator: `urn:uuid:` and a version-4 UUID."""
    return f"urn:uuid:{uuid.UUID(int=rng.getrandbits(128), version=4)}"


def timestamp(rng: random.Random, start_days: int = 0, span_days: int = 3650) -> str:
    """An ISO-8601 UTC time within `span_days` after 2015-01-01 plus `start_days`."""
    days = start_days + int(rng.random() * span_days)
    moment = _EPOCH + datetime.timedelta(days=days, seconds=int(rng.random() * 86_400))
    return iso_time(moment, "T") + "Z"


def iso_time(moment: datetime.datetime, separator: str) -> str:
    """`YYYY-MM-DD<separator>HH:MM:SS`, formatted directly (faster than `strftime`)."""
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}{separator}"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )


class RollingFiles:
    """One source's files, opened one after another as each fills to its planned size."""

    def __init__(self, out: str, source: str, sizes: list[int], open_sink: Callable[[str], Any]):
        self.out = out
        self.source = source
        self.sizes = sizes
        self.open_sink = open_sink
        self.index = -1
        self.row = 0
        self.sink: Any = None
        self.names: list[str] = []

    def starts_new_file(self) -> bool:
        """Whether the next document opens a new file."""
        return self.sink is None or self.row >= self.sizes[self.index]

    def next_slot(self) -> tuple[Any, str, int]:
        """The sink for the next document, the file's relative path, and the row in it."""
        if self.starts_new_file():
            self.close()
            self.index += 1
            self.row = 0
            name = FILE_NAMES[self.source].format(index=self.index)
            self.names.append(name)
            self.sink = self.open_sink(join_url(self.out, name))
        row = self.row
        self.row += 1
        return self.sink, self.names[-1], row

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()
            self.sink = None


def open_sink(
    source: str, rng: random.Random, web_profile: str = "compact"
) -> Callable[[str], Any]:
    if source == "web":
        return lambda url: WarcSink(
            url, record_uuid(rng), timestamp(rng, 3000, 30), profile=web_profile
        )
    if source == "forum":
        return lambda url: ParquetSink(url, FORUM_SCHEMA)
    return JsonlSink


def place(files: RollingFiles, draft: Draft, serial: int, rng: random.Random) -> tuple[str, str]:
    """Write `draft` as the next document of its source; return its id and file."""
    sink, name, row = files.next_slot()
    if draft.source == "web":
        doc_id = record_uuid(rng)
        date = timestamp(rng, 3000, 60)
        sink.write(doc_id, draft.fields["url"], date, draft.text, draft.headers)
    elif draft.source == "wiki":
        doc_id = f"wiki-{serial:07d}"
        sink.write({"id": doc_id, "text": draft.text, **draft.fields})
    elif draft.source == "code":
        doc_id = f"code-{serial:07d}"
        sink.write({"id": doc_id, "text": draft.text, **draft.fields})
    else:
        doc_id = f"{name.removeprefix(ID_ROOT + '/')}#{row}"
        sink.write({"text": draft.text, **draft.fields})
    return doc_id, name


def place_html(out: str, draft: Draft, index: int) -> tuple[str, str]:
    """Write a page as its own HTML file; its id is the path below `raw/`."""
    name = HTML_NAME.format(index=index)
    write_text(join_url(out, name), draft.text)
    return name.removeprefix(ID_ROOT + "/"), name
