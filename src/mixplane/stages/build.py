"""Stages by name: a built-in stage's YAML name or a custom stage's import path, with its
options validated.

Example:
    >>> build_stage("gopher_quality", {"min_words": 50}).min_words
    50
"""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import ValidationError

from mixplane.errors import ConfigError
from mixplane.stages import BUILTIN_STAGES
from mixplane.stages.base import FunctionStage, Stage


def _import(path: str) -> Any:
    separator = ":" if ":" in path else "."
    module_name, _, attribute = path.rpartition(separator)
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attribute)
    except (ImportError, AttributeError, ValueError) as error:
        raise ConfigError(f"cannot import stage {path!r}: {error}") from None


def build_stage(name: str, options: dict[str, Any] | None) -> Stage:
    """Instantiate a stage from its YAML name (built-in) or import path, validating options.

    Example:
        >>> build_stage("my_module:Shout", {"suffix": "!!"})  # doctest: +SKIP
    """
    options = dict(options or {})
    if name in BUILTIN_STAGES:
        target = _import(BUILTIN_STAGES[name])
    elif "." in name or ":" in name:
        target = _import(name)
    else:
        valid = ", ".join(sorted(BUILTIN_STAGES)) or "(none)"
        raise ConfigError(
            f"unknown stage {name!r}; built-in stages: {valid}; "
            "or give an import path like 'my_module:MyStage'"
        )
    if isinstance(target, type) and issubclass(target, Stage):
        try:
            return target(**options).runnable()
        except ValidationError as error:
            raise ConfigError(_describe(name, target, error)) from None
    if callable(target):
        return FunctionStage(function=target, label=name, options=options)
    raise ConfigError(f"{name!r} is neither a Stage subclass nor a function")


def _describe(name: str, target: type[Stage], error: ValidationError) -> str:
    valid = ", ".join(target.model_fields) or "(none)"
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "options"
        if item["type"] == "extra_forbidden":
            problems.append(f"unknown option {where!r}")
        else:
            problems.append(f"option {where!r}: {item['msg']}")
    return f"stage {name!r}: {'; '.join(problems)}. Valid options: {valid}"
