"""`policy:` in a mixture: which policy adapts the weights, how often, and from when.

The keys every policy takes are fields here; any other key is an option of the named
policy, checked against that policy's `Options` when the mixture is read.

Validated with a context `{"policies": names}` (a posted mixture), only built-in policies and
those `names` are accepted: nothing else is imported.

Example:
    >>> spec = PolicySpec.model_validate({"name": "static", "update_every": 50})
    >>> spec.update_every, spec.delay, spec.policy_options()
    (50, 8, PolicyOptions())
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from mixplane.configs import describe_errors
from mixplane.errors import MixplaneError
from mixplane.mix.policy import BUILTIN_POLICIES, not_allowed, policy_class
from mixplane.mix.policy.base import PolicyOptions


class PolicySpec(BaseModel):
    """The adaptive part of a mixture; see docs/adaptive.md."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(description="static, ado, excess_loss, odm, or an import path module:Class")
    update_every: int = Field(100, ge=1, description="steps between weight updates")
    warmup_steps: int = Field(
        0, ge=0, description="steps on the declared weights before the first update"
    )
    min_weight: float = Field(
        0.0, ge=0, lt=1, description="floor of every component's weight after an update"
    )
    delay: int = Field(
        8,
        ge=1,
        description="weights decided at step s apply from step s + delay (DataLoader "
        "workers have read ahead; the loader checks the delay covers it)",
    )
    group: str | None = Field(
        None,
        description="adapt the children of this component only (default: every leaf)",
    )
    on_nonfinite: Literal["raise", "skip"] = Field(
        "raise",
        description="a step with a nan or inf loss: raise on every rank, or skip (its losses "
        "are left out on every rank; an update with only skipped steps decides nothing)",
    )

    @model_validator(mode="after")
    def _options(self, info: ValidationInfo) -> PolicySpec:
        allowed = (info.context or {}).get("policies")
        if allowed is not None and self.name not in BUILTIN_POLICIES and self.name not in allowed:
            raise ValueError(not_allowed(self.name, allowed))  # before any import
        try:
            self.policy_options()
        except MixplaneError as error:
            raise ValueError(str(error)) from None
        except ValidationError as error:
            problems = describe_errors(error, policy_class(self.name).Options)
            common = ", ".join(PolicySpec.model_fields)
            raise ValueError(
                f"policy {self.name!r}: {problems}; every policy also takes {common}"
            ) from None
        return self

    def policy_options(self) -> PolicyOptions:
        """The named policy's own options, validated by its `Options` model."""
        extra: dict[str, Any] = dict(self.model_extra or {})
        return policy_class(self.name).Options(**extra)
