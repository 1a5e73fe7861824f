"""A persistent dedup index: the keys (and signatures) of every document a run kept.

Layout under the index folder:

- `index.json`: the parameters the keys depend on (a stage with other parameters cannot use
  the index) and the list of generations, each naming its runs;
- `gen-RUNID/task-NNNNN.*`: one run per task of the run that added the generation, in the
  format of `runs.py`, holding only the documents that run kept.

A later run reads every generation as extra runs, so its documents that duplicate earlier
ones are dropped, without reading the earlier corpus again. A generation is named after the
run that wrote it, which ignores its own generation: repeating a run (after a crash, say)
gives the same decisions and rewrites the same files. `index.json` is replaced atomically
after the generation's files are complete. Two runs must not add to one index at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from mixplane.errors import ConfigError
from mixplane.io.atomic import join_url, write_bytes
from mixplane.io.urls import url_filesystem
from mixplane.manifest import read_json
from mixplane.stages.dedup.runs import Run, load_arrays, read_ids, write_sorted_run

INDEX_FILE = "index.json"
FORMAT = 1


@dataclass(frozen=True)
class DedupIndex:
    """An index folder used with the given key parameters.

    Example:
        >>> index = DedupIndex("dedup-index", {"kind": "exact"})  # doctest: +SKIP
        >>> index.runs(excluding="abc")  # doctest: +SKIP
        []
    """

    path: str
    params: dict[str, Any]
    storage_options: dict[str, Any] | None = None

    def _manifest(self) -> dict[str, Any]:
        url = join_url(self.path, INDEX_FILE)
        fs, path = url_filesystem(url, self.storage_options)
        if not fs.exists(path):
            return {"format": FORMAT, "params": self.params, "generations": []}
        manifest = read_json(url, self.storage_options)
        if manifest.get("params") != self.params:
            old, new = manifest.get("params", {}), self.params
            differ = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            changes = ", ".join(f"{k}: index {old.get(k)!r}, stage {new.get(k)!r}" for k in differ)
            raise ConfigError(
                f"{url}: the dedup index was built with other parameters ({changes}); "
                "use a new index path or the same stage options"
            )
        return manifest

    def runs(self, excluding: str) -> list[Run]:
        """Runs of every generation except the one written by run `excluding`."""
        runs = []
        for generation in self._manifest()["generations"]:
            if generation["name"] == _generation(excluding):
                continue
            for item in generation["runs"]:
                prefix = join_url(self.path, generation["name"], item["name"])
                runs.append(Run(prefix, item["documents"], item["keyed"]))
        return runs

    def run_prefix(self, run_id: str, task: int) -> str:
        return join_url(self.path, _generation(run_id), f"task-{task:05d}")

    def commit(self, run_id: str, runs: list[Run]) -> None:
        """Record run `run_id`'s generation (replacing an earlier copy of it)."""
        manifest = self._manifest()
        name = _generation(run_id)
        generation = {
            "name": name,
            "documents": sum(run.documents for run in runs),
            "runs": [
                {"name": run.prefix.rsplit("/", 1)[-1], "documents": run.documents,
                 "keyed": run.keyed}
                for run in runs
            ],
        }  # fmt: skip
        others = [g for g in manifest["generations"] if g["name"] != name]
        manifest["generations"] = [*others, generation]
        data = orjson.dumps(manifest, option=orjson.OPT_INDENT_2)
        write_bytes(join_url(self.path, INDEX_FILE), data, self.storage_options)


def _generation(run_id: str) -> str:
    return f"gen-{run_id}"


def write_index_run(item: tuple[Run, str, np.ndarray], storage_options) -> Run:
    """Copy a task's run into the index without the rows in `dropped` (renumbering rows)."""
    run, prefix, dropped = item
    keep = np.ones(run.documents, dtype=bool)
    keep[dropped] = False
    renumbered = (np.cumsum(keep) - 1).astype(np.uint32)
    arrays = load_arrays(run.url("run"), storage_options)
    keys, rows = arrays["keys"], arrays["rows"]
    bands, width, _ = keys.shape
    kept_keys = int(keep[rows[0]].sum()) if bands else 0
    new_keys = np.empty((bands, width, kept_keys), dtype=np.uint64)
    new_rows = np.empty((bands, kept_keys), dtype=np.uint32)
    for band in range(bands):
        chosen = keep[rows[band]]
        new_keys[band] = keys[band][:, chosen]
        new_rows[band] = renumbered[rows[band][chosen]]
    signatures = None
    if arrays["sigs"].size:
        signatures = np.asarray(arrays["sigs"][keep])
    ids = read_ids(run, storage_options).filter(keep)
    return write_sorted_run(
        prefix, new_keys, new_rows, ids["id"], ids["source"], signatures, storage_options
    )
