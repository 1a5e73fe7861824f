"""Routes that read the catalog: datasets, counts, samples, composition, histograms,
documents, thumbnails, audio clips and lineage. Everything that scans runs in a scan process
through the service's `QueryRunner`, by the request's deadline, its answer cached; the
routes stay on the event loop, so a health check or a cached answer never waits behind a
scan."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, HTTPException, Path, Query
from fastapi.responses import Response
from pydantic import StringConstraints

from mixplane._version import __version__
from mixplane.catalog.composition import MAX_BINS
from mixplane.catalog.dataset import AUDIO_TEXT, IMAGE_TEXT
from mixplane.errors import MixplaneError
from mixplane.refs import NAME, split_refs
from mixplane.serve import clips, exports, models, scans, thumbnails
from mixplane.serve.ranges import RangeNotSatisfiable, requested_range
from mixplane.serve.service import Service, deadline, service

router = APIRouter(prefix="/api", tags=["catalog"])
MAX_SAMPLES = 50
EVERYTHING = "TRUE"

# Bounded so that the longest documented query fits the request head (`server.py`).
DatasetRefs = (
    list[Annotated[str, StringConstraints(pattern=models.DATASETS, max_length=4096)]] | None
)
DatasetsQuery = Query(
    None,
    max_length=8,
    description="NAME@N or NAME (latest), repeated (at most 8 times) or comma-separated; "
    "default: all",
)
WhereQuery = Query(EVERYTHING, max_length=10_000, description="a predicate over properties")


def column_query() -> Any:
    """A new one per parameter: FastAPI names a parameter's Query after its first use."""
    return Query(
        ...,
        pattern=models.COLUMN,
        description="a property column of the datasets (see /api/datasets); another is a 400",
    )


FormatQuery = Query("json", description="csv: the same answer as a CSV file")
ScaleQuery = Query("linear", description="log: buckets of equal width in log10 (values > 0)")
DatasetPath = Path(pattern=models.DATASET, description="NAME@N, or NAME for the latest")
ShardPath = Path(pattern=models.SHARD, description="a shard of the dataset, as it lists them")
IndexPath = Path(ge=0, le=scans.MAX_OFFSET, description="the document's index in its shard")


@router.get("/health", response_model=models.Health)
async def health(svc: Service = Depends(service)) -> dict[str, Any]:
    return {"status": "ok", "version": __version__, "catalog": svc.settings.catalog}


@router.get("/datasets", response_model=list[models.DatasetInfo])
def datasets(all: bool = False, svc: Service = Depends(service)) -> list[dict[str, Any]]:
    """The latest version of every dataset (with `all`, every version)."""
    catalog = svc.queries.catalog
    versions = catalog.versions() if all else catalog.latest()
    return [version.summary() for version in versions]


@router.get("/datasets/{name}", response_model=models.DatasetVersions)
def dataset_versions(
    name: str = Path(pattern=NAME.pattern, description="a dataset's name"),
    svc: Service = Depends(service),
) -> dict[str, Any]:
    """Every version of one dataset, oldest first."""
    found = [v.summary() for v in svc.queries.catalog.versions() if v.name == name]
    if not found:
        raise HTTPException(404, f"no dataset named {name!r}; see /api/datasets")
    return {"name": name, "versions": found}


@router.get("/count", response_model=models.Count)
async def count(
    where: str = WhereQuery,
    datasets: DatasetRefs = DatasetsQuery,
    svc: Service = Depends(service),
    until: float = Depends(deadline),
) -> dict[str, Any]:
    """Documents and tokens matching `where`, per dataset and in all."""
    return await svc.queries.answer(until, scans.count, where, split_refs(datasets))


@router.get("/samples", response_model=models.Samples, responses=exports.CSV_CONTENT)
async def samples(
    where: str = WhereQuery,
    datasets: DatasetRefs = DatasetsQuery,
    k: int = Query(5, ge=1, le=MAX_SAMPLES, description="documents on the page"),
    offset: int = Query(0, ge=0, le=scans.MAX_OFFSET, description="matching documents before it"),
    format: Literal["json", "csv"] = FormatQuery,
    svc: Service = Depends(service),
    until: float = Depends(deadline),
) -> Any:
    """A page of matching documents with their text: `k` of them from the `offset`-th, in the
    catalog's order (datasets, shards, documents); `total` says how many match."""
    chosen = split_refs(datasets)
    answer = await svc.queries.answer(until, scans.samples, where, chosen, k, offset)
    if format == "csv":
        return exports.csv_response(exports.samples_csv(answer), f"samples-{offset}")
    return answer


@router.get(
    "/composition",
    response_model=models.Composition,
    response_model_exclude_none=True,
    responses=exports.CSV_CONTENT,
)
async def composition_of(
    by: str = column_query(),
    where: str = WhereQuery,
    datasets: DatasetRefs = DatasetsQuery,
    bins: int = Query(10, ge=1, le=MAX_BINS, description="buckets of a numeric column"),
    scale: Literal["linear", "log"] = ScaleQuery,
    format: Literal["json", "csv"] = FormatQuery,
    svc: Service = Depends(service),
    until: float = Depends(deadline),
) -> Any:
    """Documents and tokens grouped by a property (numbers in buckets: "[low, high)", the
    last "[low, high]")."""
    chosen = split_refs(datasets)
    answer = await svc.queries.answer(until, scans.composition_of, by, where, chosen, bins, scale)
    if format == "csv":
        return exports.csv_response(exports.composition_csv(answer), f"composition-{by}")
    return answer


@router.get("/histogram", response_model=models.Histogram, response_model_exclude_none=True)
async def histogram_of(
    column: str = column_query(),
    where: str = WhereQuery,
    datasets: DatasetRefs = DatasetsQuery,
    bins: int = Query(20, ge=1, le=MAX_BINS),
    scale: Literal["linear", "log"] = ScaleQuery,
    svc: Service = Depends(service),
    until: float = Depends(deadline),
) -> dict[str, Any]:
    """Documents and tokens of a numeric property in buckets of equal width (in log10 with
    `scale=log`): each holds low <= value < high, the last low <= value <= high."""
    chosen = split_refs(datasets)
    return await svc.queries.answer(until, scans.histogram_of, column, where, chosen, bins, scale)


@router.get("/documents/{dataset}/{shard}/{index}", response_model=models.DocumentWithLineage)
async def document(
    dataset: str = DatasetPath,
    shard: str = ShardPath,
    index: int = IndexPath,
    svc: Service = Depends(service),
    until: float = Depends(deadline),
) -> dict[str, Any]:
    """One document: properties, text, and its way back to the raw input it came from."""
    return await svc.queries.answer(until, scans.document, dataset, shard, index)


@router.get(
    "/thumbnails/{dataset}/{shard}/{index}",
    response_class=Response,
    responses={
        200: {"content": {"image/jpeg": {}, "image/png": {}}, "description": "the preview"},
        501: {"model": models.Problem, "description": "the service cannot decode images"},
    },
)
def thumbnail(
    dataset: str = DatasetPath,
    shard: str = ShardPath,
    index: int = IndexPath,
    size: int = Query(256, ge=thumbnails.SIZES[0], le=thumbnails.SIZES[1], description="pixels"),
    svc: Service = Depends(service),
) -> Response:
    """A preview of an image-text document's image, at most `size` pixels a side (JPEG, or
    PNG for images with transparency). One sample's bytes, bounded in size and pixels: it
    runs on a worker thread, not a scan process."""
    version = _media_version(svc, dataset, shard, index, IMAGE_TEXT, "images")
    options = svc.queries.catalog.storage_options
    try:
        image = thumbnails.sample_image(version.uri, shard, index, options)
        data, media_type = thumbnails.thumbnail(image, size)
    except thumbnails.NoThumbnail as error:
        status = 501 if isinstance(error, thumbnails.NoPillow) else 400
        raise HTTPException(status, str(error)) from None
    return Response(data, media_type=media_type, headers={"Cache-Control": _cache(dataset)})


AUDIO_TYPES = {media_type: {} for media_type in dict.fromkeys(clips.MEDIA_TYPES.values())}
ACCEPT_RANGES = {"description": "bytes", "schema": {"type": "string", "enum": ["bytes"]}}


AUDIO_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "content": AUDIO_TYPES,
        "description": "the whole clip",
        "headers": {"Accept-Ranges": ACCEPT_RANGES},
    },
    206: {
        "content": AUDIO_TYPES,
        "description": "the part of the clip the Range header asks for",
        "headers": {
            "Accept-Ranges": ACCEPT_RANGES,
            "Content-Range": {
                "description": "bytes FIRST-LAST/SIZE",
                "required": True,
                "schema": {"type": "string", "pattern": r"^bytes \d+-\d+/\d+$"},
            },
        },
    },
    416: {
        "model": models.Problem,
        "description": "a range that no byte of the clip is in",
        "headers": {
            "Content-Range": {
                "description": "bytes */SIZE",
                "required": True,
                "schema": {"type": "string", "pattern": r"^bytes \*/\d+$"},
            }
        },
    },
}


# HEAD as well: a client may ask a clip's size and type before it reads it.
@router.get("/audio/{dataset}/{shard}/{index}", response_class=Response, responses=AUDIO_RESPONSES)
@router.head("/audio/{dataset}/{shard}/{index}", response_class=Response, responses=AUDIO_RESPONSES)
def audio(
    dataset: str = DatasetPath,
    shard: str = ShardPath,
    index: int = IndexPath,
    range_: str | None = Header(
        None,
        alias="Range",
        max_length=200,
        description="bytes=FIRST-LAST, bytes=FIRST- or bytes=-LENGTH",
    ),
    if_range: str | None = Header(
        None,
        alias="If-Range",
        max_length=200,
        description="any: the whole clip is sent (the service gives no validator to match)",
    ),
    svc: Service = Depends(service),
) -> Response:
    """An audio-text document's clip as it is stored (FLAC, WAV, MP3, Ogg or Opus), for a
    player: one `Range` (what a browser's <audio> asks for to seek) gets its part (206), a
    range past the end 416; several ranges, or an invalid Range header, get the whole clip.
    Samples over 64 MiB are refused (400). It runs on a worker thread, not a scan process."""
    version = _media_version(svc, dataset, shard, index, AUDIO_TEXT, "audio")
    options = svc.queries.catalog.storage_options
    try:
        data, media_type = clips.sample_clip(version.uri, shard, index, options)
    except clips.NoClip as error:
        raise HTTPException(400, str(error)) from None
    headers = {"Cache-Control": _cache(dataset), "Accept-Ranges": "bytes"}
    try:
        part = None if if_range is not None else requested_range(range_, len(data))
    except RangeNotSatisfiable as error:
        headers["Content-Range"] = f"bytes */{len(data)}"
        raise HTTPException(416, str(error), headers=headers) from None
    if part is None:
        return Response(data, media_type=media_type, headers=headers)
    start, end = part
    headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
    return Response(data[start:end], 206, media_type=media_type, headers=headers)


def _media_version(svc: Service, dataset: str, shard: str, index: int, kind: str, what: str):
    """The catalog version `dataset` if it is of `kind` and holds document `index` of
    `shard`; a 404 naming what is missing otherwise."""
    try:
        version = svc.queries.catalog.get(dataset)
    except MixplaneError as error:
        raise HTTPException(404, str(error)) from None
    if version.kind != kind:
        raise HTTPException(404, f"{version.ref} holds no {what}")
    try:
        scans.check_document(version, shard, index)
    except scans.NotFound as error:
        raise HTTPException(404, str(error)) from None
    return version


def _cache(dataset: str) -> str:
    """A pinned version never changes; the latest may."""
    return "private, max-age=86400" if "@" in dataset else "private, no-cache"


@router.get("/lineage/{dataset}", response_model=models.Lineage)
async def lineage(
    dataset: str = DatasetPath, svc: Service = Depends(service), until: float = Depends(deadline)
) -> dict[str, Any]:
    """The steps that made a dataset version, back to its raw inputs."""
    return await svc.queries.answer(until, scans.lineage, dataset)
