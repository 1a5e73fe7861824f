"""At start-up, a mixture that pins a version a takedown replaced is flagged.

A takedown makes a new version of every dataset it changes; a mixture that names datasets
without `@N` reads the new ones, but a pinned `NAME@N` keeps reading the documents taken
down. The loader warns (`SupersededVersionWarning`, and the log) or, with `takedowns:
refuse` in the mixture, stops with an error naming the request and the version to move to.

Example:
    >>> pinned_refs(MixtureSpec.parse({"datasets": ["web@1", "wiki"], "seq_len": 8,
    ...     "components": {"a": {"weight": 1, "datasets": ["code@2"]}}}))
    ['code@2', 'web@1']
"""

from __future__ import annotations

import logging
import warnings

from mixplane.errors import MixplaneError, SupersededVersionWarning
from mixplane.mix.spec import ComponentSpec, MixtureSpec

log = logging.getLogger(__name__)


def pinned_refs(spec: MixtureSpec) -> list[str]:
    """Every `NAME@N` the mixture names (at the top or in any component), sorted."""
    refs = set(spec.datasets or ())

    def visit(components: dict[str, ComponentSpec]) -> None:
        for component in components.values():
            refs.update(component.datasets or ())
            visit(component.components or {})

    visit(spec.components)
    return sorted(ref for ref in refs if "@" in ref)


def check_pins(spec: MixtureSpec, catalog_path: str, where: str = "mixture") -> list:
    """Warn about (or, with `takedowns: refuse`, refuse) pinned versions a takedown
    replaced; the `Superseded` findings. A mixture without pins opens no catalog here."""
    pins = pinned_refs(spec)
    if not pins:
        return []
    from mixplane.catalog.registry import Registry
    from mixplane.catalog.takedown.ledger import superseded

    with Registry(catalog_path) as registry:
        found = superseded(registry, pins, where)
    if found and spec.takedowns == "refuse":
        raise MixplaneError(
            "; ".join(item.message() for item in found) + " (the mixture says takedowns: refuse)"
        )
    for item in found:
        log.warning(item.message())
        warnings.warn(item.message(), SupersededVersionWarning, stacklevel=4)
    return found
