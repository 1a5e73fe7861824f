"""The loader: the sample plan, token reading, resume state and the PyTorch adapter.

Example:
    >>> from mixplane.load import MixtureDataset
    >>> dataset = MixtureDataset("mixture.yaml", rank=0, world_size=1)  # doctest: +SKIP
    >>> batch = next(dataset.batches(8))  # doctest: +SKIP
    >>> batch["input_ids"].shape  # doctest: +SKIP
    (8, 2048)
"""

from mixplane.load.dataset import MixtureDataset
from mixplane.load.partition import Layout
from mixplane.load.plan import SamplePlan
from mixplane.load.resolve import resolve_mixture
from mixplane.load.resolved import ResolvedMixture
from mixplane.load.state import LoaderState

__all__ = [
    "Layout",
    "LoaderState",
    "MixtureDataset",
    "ResolvedMixture",
    "SamplePlan",
    "resolve_mixture",
]
