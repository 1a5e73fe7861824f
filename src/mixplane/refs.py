"""Dataset references: `NAME` (the latest version) or `NAME@N` (version N, from 1).

The catalog registers names with this grammar and resolves references with it; mixture specs
check their `datasets:` lists with it, so a bad reference fails when the spec is read, not
when the catalog is queried.

Example:
    >>> parse_ref("web@2"), parse_ref("web")
    (('web', 2), ('web', None))
    >>> parse_ref("web@x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    mixplane.errors.MixplaneError: bad dataset reference 'web@x': 'x' after '@' is not a ...
"""

from __future__ import annotations

import re

from mixplane.errors import MixplaneError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
NAME_RULE = "a name starts with a letter or digit and uses letters, digits, '_', '-', '.'"
_VERSION = re.compile(r"^[1-9][0-9]{0,17}$")  # a version fits the catalog's 64-bit integers
# What `parse_ref` accepts, as a regular expression (for JSON Schemas): NAME or NAME@N.
REF = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}(@[1-9][0-9]{0,17})?"


def parse_ref(ref: str) -> tuple[str, int | None]:
    """`name` or `name@N` -> (name, N or None for the latest); refuses anything else."""
    if not isinstance(ref, str):
        raise MixplaneError(f"bad dataset reference {ref!r}: expected a string NAME or NAME@N")
    name, at, version = ref.partition("@")
    if not NAME.match(name):
        raise MixplaneError(
            f"bad dataset reference {ref!r}: use NAME or NAME@N, where {NAME_RULE} "
            "(up to 128 characters)"
        )
    if not at:
        return name, None
    if not _VERSION.match(version):
        raise MixplaneError(
            f"bad dataset reference {ref!r}: {version!r} after '@' is not a version; use "
            f"NAME or NAME@N with N >= 1, e.g. '{name}@2'"
        )
    return name, int(version)


def format_ref(name: str, version: int | None) -> str:
    """The reference of `name` at `version` (`name` alone for the latest)."""
    return name if version is None else f"{name}@{version}"


def split_refs(items: list[str] | None) -> tuple[str, ...]:
    """References given as repeated options or parameters, each possibly comma-separated.

    Example:
        >>> split_refs(["web@1, wiki", "code"])
        ('web@1', 'wiki', 'code')
    """
    return tuple(ref.strip() for item in items or [] for ref in item.split(",") if ref.strip())
