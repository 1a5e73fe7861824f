"""What every config model shares: reading YAML files and explaining validation errors.

The pipeline, tokenize and mixture configs are pydantic models; these helpers give them the
same one-line errors (which file, which key, which keys are valid).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from mixplane.errors import ConfigError

ModelT = TypeVar("ModelT", bound=BaseModel)


def read_yaml_mapping(path: str | Path, expected: str) -> dict[str, Any]:
    """Read a YAML file that must hold a mapping; `expected` names its main keys for errors.

    Example:
        >>> read_yaml_mapping("pipeline.yaml", "input, output and stages")  # doctest: +SKIP
    """
    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: invalid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with {expected}")
    return data


def read_yaml_overridden(
    path: str | Path, expected: str, overrides: dict[str, Any]
) -> dict[str, Any]:
    """`read_yaml_mapping`, then the `overrides` that are not None (command-line options) win.

    Example:
        >>> read_yaml_overridden("p.yaml", "input and output", {"workers": 4})  # doctest: +SKIP
    """
    data = read_yaml_mapping(path, expected)
    data.update({key: value for key, value in overrides.items() if value is not None})
    return data


def validate_config(
    model: type[ModelT], data: Any, where: str, context: dict[str, Any] | None = None
) -> ModelT:
    """Validate `data` against `model`, turning pydantic's report into one readable line.
    `context` reaches the models' validators (pydantic's validation context).

    Example:
        >>> validate_config(PipelineConfig, {"input": "a.jsonl"}, "p.yaml")  # doctest: +SKIP
        ConfigError: p.yaml: missing key 'output'
    """
    try:
        return model.model_validate(data, context=context)
    except ValidationError as error:
        raise ConfigError(f"{where}: {describe_errors(error, model)}") from None


def describe_errors(error: ValidationError, model: type[BaseModel]) -> str:
    """One line naming each bad key and, for unknown keys, the valid ones."""
    problems = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"])
        if item["type"] == "extra_forbidden":
            valid = ", ".join(_fields_at(model, item["loc"][:-1]))
            problems.append(f"unknown key {where!r} (valid: {valid})")
        elif item["type"] == "missing":
            problems.append(f"missing key {where!r}")
        else:
            message = item["msg"].removeprefix("Value error, ")
            problems.append(f"{where}: {message}")
    return "; ".join(problems)


def _fields_at(model: type[BaseModel], location: tuple) -> list[str]:
    current: Any = model
    for part in location:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if hasattr(current, "model_fields") else None
        if field is None:
            break
        annotation = field.annotation
        inner = getattr(annotation, "__args__", (annotation,))
        current = next((a for a in inner if hasattr(a, "model_fields")), current)
    return list(getattr(current, "model_fields", {}))
