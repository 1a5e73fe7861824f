"""The loader: the sample plan, token reading, resume state and the PyTorch adapter.

Example:
    >>> from mixplane.load import MixtureDataset
    >>> dataset = MixtureDataset("mixture.yaml", rank=0, world_size=1)  # doctest: +SKIP
    >>> batch = next(dataset.batches(8))  # doctest: +SKIP
    >>> batch["input_ids"].shape  # doctest: +SKIP
    (8, 2048)
"""

from mixplane.load.dataset import MixtureDataset
from mixplane.load.plan.partition import Layout
from mixplane.load.plan.resolved import ResolvedMixture
from mixplane.load.plan.samples import SamplePlan
from mixplane.load.plan.state import LoaderState
from mixplane.load.resolve.query import resolve_mixture

__all__ = [
    "Layout",
    "LoaderState",
    "MixtureDataset",
    "ResolvedMixture",
    "SamplePlan",
    "resolve_mixture",
]
