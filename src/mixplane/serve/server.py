"""Running the service in uvicorn, stopped promptly by SIGTERM or Ctrl-C.

On the signal the service stops accepting connections and kills its scan processes at once,
so requests waiting on a scan answer 503 instead of running to their deadline; other
requests in flight (a plan file being sent) get `GRACE_SECONDS` to finish.

Example:
    >>> app = create_app(ServeSettings(catalog="catalog.duckdb"))  # doctest: +SKIP
    >>> run(app, "127.0.0.1", 8000)  # doctest: +SKIP
"""

from __future__ import annotations

import uvicorn
from fastapi import FastAPI

from mixplane.serve.pool import ScanPool

GRACE_SECONDS = 5
# The request line and headers, read before the app sees anything: room for the longest
# query the API documents (a 10,000-character predicate percent-encoded at up to 12 bytes a
# character, and the dataset lists), where the HTTP parser's 16 KiB default would answer a
# documented request with a plain-text 400 of its own.
MAX_REQUEST_HEAD = 256 * 1024


def run(app: FastAPI, host: str, port: int) -> None:
    """Serve `app` (from `create_app`) on `host`:`port` until a signal stops it."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=GRACE_SECONDS,
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD,
    )
    _Server(config, app.state.service.pool).run()


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, pool: ScanPool):
        super().__init__(config)
        self.pool = pool

    async def shutdown(self, sockets=None) -> None:
        self.pool.close()  # before waiting for the requests in flight: theirs end now
        await super().shutdown(sockets)
