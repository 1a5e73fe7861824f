"""`mixplane gc`: the data's life cycle. Plan which versions to keep and why (`plan`, pure),
gather what the plan needs (`survey`), then remove the rest's files safely (`apply`).

Example:
    >>> from mixplane.catalog.gc import Retention, apply_plan, survey
    >>> plan = survey("catalog.duckdb", Retention(keep_latest=2))  # doctest: +SKIP
    >>> apply_plan(plan, "catalog.duckdb").bytes  # doctest: +SKIP
    81234
"""

from mixplane.catalog.gc.apply import GcResult, apply_plan
from mixplane.catalog.gc.plan import GcPlan, InUse, Retention, VersionOnDisk, plan_gc
from mixplane.catalog.gc.survey import survey

__all__ = [
    "GcPlan",
    "GcResult",
    "InUse",
    "Retention",
    "VersionOnDisk",
    "apply_plan",
    "plan_gc",
    "survey",
]
