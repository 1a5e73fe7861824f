"""The catalog: tokenized datasets registered in DuckDB and found by their properties.

Example:
    >>> from mixplane.catalog import Catalog
    >>> catalog = Catalog("catalog.duckdb")  # doctest: +SKIP
    >>> catalog.register("out/tokens", name="web")  # doctest: +SKIP
    >>> selection = catalog.select("language = 'de' AND quality > 0.2")  # doctest: +SKIP
    >>> selection.documents, selection.tokens, selection.nbytes  # doctest: +SKIP
"""

from mixplane.catalog.catalog import DEFAULT_CATALOG, Catalog
from mixplane.catalog.predicate import PredicateError, ValidPredicate, check_predicate
from mixplane.catalog.registry import DatasetVersion
from mixplane.catalog.selection import DatasetSelection, Selection

__all__ = [
    "DEFAULT_CATALOG",
    "Catalog",
    "DatasetSelection",
    "DatasetVersion",
    "PredicateError",
    "Selection",
    "ValidPredicate",
    "check_predicate",
]
