"""Mixtures: the spec, weight math and the blend, as pure functions (no I/O here).

Example:
    >>> from mixplane.mix import MixtureSpec, MixtureTree
    >>> spec = MixtureSpec.parse({"seq_len": 16, "components": {
    ...     "a": {"weight": 0.75}, "b": {"weight": 0.25}}})
    >>> MixtureTree(spec).leaf_weights([100, 100]).tolist()
    [0.75, 0.25]
"""

from mixplane.mix.blend import NO_CAP, Blend, Segment
from mixplane.mix.quota import exact_shares, period_table, picks_before
from mixplane.mix.spec import ComponentSpec, MixtureSpec, ScheduleEntry, Weighting, load_mixture
from mixplane.mix.tree import Leaf, MixtureTree
from mixplane.mix.weights import cap_by_epochs, normalize, temperature_weights, unimax_weights

__all__ = [
    "NO_CAP",
    "Blend",
    "ComponentSpec",
    "Leaf",
    "MixtureSpec",
    "MixtureTree",
    "ScheduleEntry",
    "Segment",
    "Weighting",
    "cap_by_epochs",
    "load_mixture",
    "normalize",
    "exact_shares",
    "period_table",
    "picks_before",
    "temperature_weights",
    "unimax_weights",
]
