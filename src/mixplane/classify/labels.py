"""An embedding classifier's training targets: a field of the documents, or a file of
(id, value) rows joined to the documents by id.

A value is a number (a score, for regression) or, for classification, 0 or 1 (true or
false). A document without one is not a training example (the pool counts it as
unlabelled); a value that is there but unusable (text, NaN, a 3 for classification) is an
error naming the file and the record, never skipped.

Example:
    >>> target = column_target("score", "regression")
    >>> target("doc-1", {"score": 3}), target("doc-2", {})
    (3.0, None)
    >>> target_value(True, "classification")
    1.0
"""

from __future__ import annotations

import math
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from mixplane.classify.data import Target
from mixplane.errors import InputError
from mixplane.io.urls import open_url, strip_compression, url_filesystem

LABEL_FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}


def target_value(value: Any, task: str) -> float:
    """A label as the float the head trains on; ValueError naming the problem otherwise.

    Example:
        >>> target_value(2, "regression"), target_value(False, "classification")
        (2.0, 0.0)
    """
    if isinstance(value, bool | int | float):
        number = float(value)
    else:
        raise ValueError(f"label {value!r} is {type(value).__name__}, expected a number")
    if not math.isfinite(number):
        raise ValueError(f"label is {number}, expected a finite number")
    if task == "classification" and number not in (0.0, 1.0):
        raise ValueError(f"label {value!r}: a classification label is 0 or 1 (false or true)")
    return number


def column_target(key: str, task: str) -> Target:
    """The target read from each document's own field `key` (None when it has none)."""

    def target(doc_id: str, properties: dict[str, Any]) -> float | None:
        value = properties.get(key)
        return None if value is None else target_value(value, task)

    return target


class FileTarget:
    """Targets from a file of (id, value) rows, looked up by document id; remembers which
    ids documents asked for, so the labels no document had can be counted."""

    def __init__(self, labels: dict[str, float]):
        self.labels = labels
        self.matched: set[str] = set()

    def __call__(self, doc_id: str, properties: dict[str, Any]) -> float | None:
        value = self.labels.get(doc_id)
        if value is not None:
            self.matched.add(doc_id)
        return value

    @property
    def without_document(self) -> int:
        return len(self.labels) - len(self.matched)


def read_labels(
    url: str,
    id_key: str,
    label_key: str,
    task: str,
    storage_options: dict[str, Any] | None = None,
) -> dict[str, float]:
    """The file's labels by document id: JSON Lines, CSV or Parquet (by suffix; JSON Lines
    and CSV may be .gz or .zst). Ids are text (a CSV's are never parsed as numbers, so
    `007` stays `007`). A missing column, a row without an id or value, an id given twice
    or an unusable value is an InputError naming the file and the row."""
    suffix = next((s for s in LABEL_FORMATS if strip_compression(url).lower().endswith(s)), None)
    if suffix is None:
        raise InputError(
            f"{url}: a labels file is JSON Lines (.jsonl), CSV (.csv) or Parquet (.parquet)"
        )
    fmt = LABEL_FORMATS[suffix]
    try:
        rows = _jsonl_rows(url, storage_options) if fmt == "jsonl" else None
        if rows is None:
            table = _read_table(url, fmt, id_key, storage_options)
            for key in (id_key, label_key):
                if key not in table.column_names:
                    columns = ", ".join(table.column_names)
                    raise InputError(f"{url}: no column {key!r}; its columns: {columns}")
            ids, values = table.column(id_key).to_pylist(), table.column(label_key).to_pylist()
            if fmt == "csv":  # one bad cell makes the column text: find the rows that are
                values = [_number_or_text(value) for value in values]
            pairs = zip(ids, values, strict=True)
            rows = ((f"row {n}", {id_key: i, label_key: v}) for n, (i, v) in enumerate(pairs))
        labels: dict[str, float] = {}
        first: dict[str, str] = {}
        for place, row in rows:
            where = f"{url}: {place}"
            doc_id, value = row.get(id_key), row.get(label_key)
            if doc_id is None or doc_id == "":
                raise InputError(f"{where}: no id (field {id_key!r})")
            doc_id = str(doc_id)
            if value is None:
                raise InputError(f"{where} (id {doc_id!r}): no label (field {label_key!r})")
            if doc_id in labels:
                raise InputError(
                    f"{where}: id {doc_id!r} is labelled twice (first at {first[doc_id]})"
                )
            try:
                labels[doc_id] = target_value(value, task)
            except ValueError as error:
                raise InputError(f"{where} (id {doc_id!r}): {error}") from None
            first[doc_id] = place
    except FileNotFoundError:
        raise InputError(f"{url}: labels file not found") from None
    return labels


def _number_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _jsonl_rows(url: str, storage_options: dict[str, Any] | None):
    with open_url(url, "rb", storage_options) as stream:
        for number, line in enumerate(stream):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as error:
                raise InputError(f"{url}: line {number + 1}: not valid JSON ({error})") from None
            if not isinstance(row, dict):
                raise InputError(f"{url}: line {number + 1}: expected a JSON object")
            yield f"line {number + 1}", row


def _read_table(url: str, fmt: str, id_key: str, storage_options: dict[str, Any] | None):
    try:
        if fmt == "csv":
            options = pa_csv.ConvertOptions(column_types={id_key: pa.string()})
            with open_url(url, "rb", storage_options) as stream:
                return pa_csv.read_csv(stream, convert_options=options)
        fs, path = url_filesystem(url, storage_options)
        with fs.open(path, "rb") as handle:
            return pq.read_table(handle)
    except (pa.ArrowInvalid, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise InputError(f"{url}: cannot read it as {fmt.upper()} ({first})") from None
