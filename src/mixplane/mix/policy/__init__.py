"""Adaptive mixing policies: per-component losses in, weights out (pure, JSON state).

Built-in policies by name (`static`, `ado`, `excess_loss`, `odm`); any other name is an
import path to a `Policy` subclass (`my_pkg.module:MyPolicy`). Where the names come from
someone else (a posted mixture), `allowed` names the only import paths that may be taken: any
other name is refused before anything is imported, with the same message whether it exists
or not.

Example:
    >>> policy_class("static").__name__, policy_class("ado").__name__
    ('Static', 'Ado')
"""

from __future__ import annotations

import importlib
from collections.abc import Collection

from mixplane.errors import ConfigError
from mixplane.mix.policy.ado import Ado
from mixplane.mix.policy.base import Observation, Policy, PolicyOptions, ValidationPoint
from mixplane.mix.policy.excess_loss import ExcessLoss, reference_losses_from_log
from mixplane.mix.policy.odm import Odm
from mixplane.mix.policy.static import Static

BUILTIN_POLICIES: dict[str, type[Policy]] = {
    "static": Static,
    "ado": Ado,
    "excess_loss": ExcessLoss,
    "odm": Odm,
}
# Names a built-in policy had before, refused with why and what to write instead (a saved
# state under the old name still loads into the new one).
RENAMED_POLICIES: dict[str, str] = {"doremi": "excess_loss"}
_RENAMED_WHY = {
    "doremi": "it is online excess-loss reweighting of the model being trained against one "
    "reference loss per component, not DoReMi (a proxy model trained with Group DRO on "
    "per-token reference losses, whose averaged weights then train the large model); "
    "the options are the same",
}


def policy_class(name: str, allowed: Collection[str] | None = None) -> type[Policy]:
    """The policy class for a built-in name or an import path (`package.module:Class`).

    With `allowed`, only built-in names and those in `allowed` are taken (`ConfigError` for
    any other, nothing imported). Example:
        >>> policy_class("os:system", allowed=())  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        mixplane.errors.ConfigError: policy 'os:system' is not allowed here: ...
    """
    if name in BUILTIN_POLICIES:
        return BUILTIN_POLICIES[name]
    if name in RENAMED_POLICIES:
        raise ConfigError(
            f"policy {name!r} is now {RENAMED_POLICIES[name]!r}: {_RENAMED_WHY[name]}; write "
            f"name: {RENAMED_POLICIES[name]}"
        )
    if allowed is not None and name not in allowed:
        raise ConfigError(not_allowed(name, allowed))
    if ":" not in name and "." not in name:
        known = ", ".join(sorted(BUILTIN_POLICIES))
        raise ConfigError(
            f"unknown policy {name!r}: built-in policies are {known}; a policy of your own is "
            "named by import path, e.g. my_pkg.policies:MyPolicy"
        )
    separator = ":" if ":" in name else "."
    module_name, _, attribute = name.rpartition(separator)
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigError(f"cannot import policy {name!r}: {error}") from None
    if not (isinstance(found, type) and issubclass(found, Policy)):
        raise ConfigError(
            f"policy {name!r} is not a subclass of mixplane.mix.policy.Policy (see its "
            "docstring for how to write one)"
        )
    return found


def not_allowed(name: str, allowed: Collection[str]) -> str:
    """Why `name` is refused: the same words whether or not such a module exists."""
    shown = name if len(name) <= 100 else name[:100] + "..."
    names = ", ".join([*sorted(BUILTIN_POLICIES), *sorted(allowed)])
    return (
        f"policy {shown!r} is not allowed here: name one of {names} (no other policy is "
        "imported for a mixture from elsewhere)"
    )


__all__ = [
    "BUILTIN_POLICIES",
    "Observation",
    "Policy",
    "PolicyOptions",
    "RENAMED_POLICIES",
    "ValidationPoint",
    "policy_class",
    "reference_losses_from_log",
]
