"""Plans from a `mixplane serve` service instead of the catalog (`plan_url`).

The service resolves the mixture on its catalog once and hands out the plan-cache entry's
files; each machine downloads them once (under a lock, every file checked against the size
and hash the service announced, `plan.json` last), then every rank and worker maps them as
it would its own resolution's. Only the standard library speaks HTTP here, so a training
node needs nothing more than `mixplane[load]`.

Example:
    >>> dataset = MixtureDataset("mixture.yaml", plan_url="http://planner:8000")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from typing import Any

from mixplane.errors import ConfigError, InputError
from mixplane.io.atomic import atomic_open
from mixplane.io.locks import locked
from mixplane.io.machine_cache import cache_root
from mixplane.io.retry import Retry
from mixplane.load.plan.resolved import ResolvedMixture
from mixplane.load.resolve.plan_cache import load_resolved
from mixplane.load.resolve.takedowns import flag_pins
from mixplane.mix.spec import MixtureSpec

TOKEN_ENV = "MIXPLANE_SERVE_TOKEN"  # the service's token, for `mixplane serve` and its clients
PLAN_ID = re.compile(r"^[0-9a-f]{32}$")
FILE_NAME = re.compile(r"^[A-Za-z0-9_]+\.(npy|json)$")
# What only this machine knows; the service uses its own catalog and cache.
LOCAL_FIELDS = {"catalog", "cache_dir", "cache_limit", "cache", "storage_options", "plan_url"}
LOCAL_FIELDS |= {"audit", "run_id"}  # the run's own record, kept beside its catalog
TIMEOUT_SECONDS = 600  # a first resolution of a large catalog takes a while
CHUNK = 1 << 22


def fetch_resolved(spec: MixtureSpec, token: str | None = None) -> ResolvedMixture:
    """The resolved mixture of `spec` from the service at `spec.plan_url`, downloaded into
    this machine's plan cache once and memory-mapped from there."""
    if not spec.plan_url:
        raise ConfigError("the mixture has no plan_url")
    service = spec.plan_url.rstrip("/")
    token = token or os.environ.get(TOKEN_ENV)
    mixture = spec.model_dump(mode="json", exclude=LOCAL_FIELDS)
    answer = _call(f"{service}/api/plans", token, {"mixture": mixture})
    plan, files = answer.get("plan", ""), answer.get("files") or []
    if not PLAN_ID.match(plan) or not files or files[0].get("name") != "plan.json":
        raise InputError(f"{service}/api/plans: not a plan service's answer: {answer!r:.200}")
    folder = os.path.join(cache_root(spec.cache_dir), "plans", f"served-{plan}")
    found = load_resolved(spec, folder)
    if found is None:
        os.makedirs(folder, exist_ok=True)
        with locked(os.path.join(folder, "resolve.lock")):
            found = load_resolved(spec, folder)  # downloaded by the process this one waited for
            if found is None:
                for item in [*files[1:], files[0]]:  # plan.json last: it marks the entry whole
                    _download(f"{service}/api/plans/{plan}", item, folder, token)
                found = load_resolved(spec, folder)
    if found is None:
        raise InputError(f"{folder}: downloaded from {service}, but cannot be read back")
    superseded = answer.get("superseded") or []
    if isinstance(superseded, list):  # pins the service's catalog says a takedown replaced
        flag_pins(spec, [str(message) for message in superseded])
    return found


def _download(base: str, item: dict[str, Any], folder: str, token: str | None) -> None:
    name = str(item.get("name", ""))
    if not FILE_NAME.match(name):
        raise InputError(f"{base}: refusing a plan file named {name!r}")
    url, path = f"{base}/{name}", os.path.join(folder, name)

    def fetch() -> None:
        with atomic_open(path) as handle, _open(url, token) as response:
            while chunk := response.read(CHUNK):
                handle.write(chunk)
            size, digest = handle.size, handle.fingerprint
            if (size, digest) != (item.get("size"), item.get("hash")):
                raise InputError(
                    f"{url}: got {size} bytes hashing {digest}, the service announced "
                    f"{item.get('size')} bytes hashing {item.get('hash')}"
                )

    Retry().call(fetch, what=url)


def _call(url: str, token: str | None, body: dict[str, Any]) -> dict[str, Any]:
    data = json.dumps(body).encode()

    def post() -> dict[str, Any]:
        with _open(url, token, data) as response:
            return json.loads(response.read())

    return Retry().call(post, what=url)


def _open(url: str, token: str | None, data: bytes | None = None):
    headers = {"Content-Type": "application/json"} if data is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS)
    except urllib.error.HTTPError as error:
        if error.code >= 500 or error.code in (408, 429):
            raise  # retried
        detail = _detail(error)
        if error.code == 401:
            raise ConfigError(f"{url}: the plan service wants its token (${TOKEN_ENV})") from None
        raise ConfigError(f"{url}: the plan service refused the mixture: {detail}") from None


def _detail(error: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(error.read()).get("detail"))
    except (ValueError, AttributeError, OSError):
        return f"HTTP {error.code}"
