"""At start-up, a mixture that pins a version a takedown replaced is flagged.

A takedown makes a new version of every dataset it changes; a mixture that names datasets
without `@N` reads the new ones, but a pinned `NAME@N` keeps reading the documents taken
down. The loader warns (`SupersededVersionWarning`, and the log) or, with `takedowns:
refuse` in the mixture, stops with an error naming the request and the version to move to.

What the catalog says is kept beside the mixture's cached plan (`takedowns.json`), whose
key changes with the catalog's content: ranks that start from the cache do not open the
catalog again (a registration holding its lock would make them fail).

Example:
    >>> pinned_refs(MixtureSpec.parse({"datasets": ["web@1", "wiki"], "seq_len": 8,
    ...     "components": {"a": {"weight": 1, "datasets": ["code@2"]}}}))
    ['code@2', 'web@1']
"""

from __future__ import annotations

import json
import logging
import os
import warnings

from mixplane.errors import MixplaneError, SupersededVersionWarning
from mixplane.io.atomic import atomic_open
from mixplane.mix.spec import ComponentSpec, MixtureSpec

log = logging.getLogger(__name__)
FINDINGS = "takedowns.json"


def pinned_refs(spec: MixtureSpec) -> list[str]:
    """Every `NAME@N` the mixture names (at the top or in any component), sorted."""
    refs = set(spec.datasets or ())

    def visit(components: dict[str, ComponentSpec]) -> None:
        for component in components.values():
            refs.update(component.datasets or ())
            visit(component.components or {})

    visit(spec.components)
    return sorted(ref for ref in refs if "@" in ref)


def superseded_pins(spec: MixtureSpec, catalog_path: str) -> list[str]:
    """What the catalog says of each pinned version a takedown replaced (one line each);
    a mixture without pins opens no catalog."""
    pins = pinned_refs(spec)
    if not pins:
        return []
    from mixplane.catalog.registry import Registry
    from mixplane.catalog.takedown.ledger import superseded

    with Registry(catalog_path) as registry:
        return [item.message() for item in superseded(registry, pins)]


def cached_pins(spec: MixtureSpec, catalog_path: str, folder: str) -> list[str]:
    """`superseded_pins`, read from (or saved to) the plan cache entry `folder`."""
    if not pinned_refs(spec):
        return []
    path = os.path.join(folder, FINDINGS)
    try:
        with open(path, "rb") as handle:
            return json.load(handle)
    except (FileNotFoundError, ValueError):
        pass
    found = superseded_pins(spec, catalog_path)
    with atomic_open(path) as handle:
        handle.write(json.dumps(found).encode())
    return found


def flag_pins(spec: MixtureSpec, found: list[str]) -> None:
    """Warn about each finding, or refuse them all with `takedowns: refuse`."""
    if found and spec.takedowns == "refuse":
        raise MixplaneError("; ".join(found) + " (the mixture says takedowns: refuse)")
    for message in found:
        log.warning(message)
        warnings.warn(message, SupersededVersionWarning, stacklevel=4)


def check_pins(spec: MixtureSpec, catalog_path: str) -> None:
    """`flag_pins` of what the catalog says now (no cache)."""
    flag_pins(spec, superseded_pins(spec, catalog_path))
