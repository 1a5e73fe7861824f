"""The inverse of an image-text epoch plan: where a sample was placed, against the plan read
forward position by position."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.load.images.plan import EpochPlan
from mixplane.load.tools.sample_order import sample_positions, step_and_rank


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    shares=st.lists(st.floats(0.05, 1.0), min_size=3, max_size=3),
    length=st.integers(1, 30),
    epochs=st.floats(0.0, 4.0),
    seed=st.integers(0, 1000),
)
def test_sample_positions_invert_the_plan(counts, shares, length, epochs, seed):
    weights = np.array(shares[: len(counts)]) / sum(shares[: len(counts)])
    plan = EpochPlan(counts, weights.tolist(), seed=seed, length=length)
    until = int(epochs * length)
    forward = [plan.lookup(p // length, np.array([p % length])) for p in range(until)]
    for component, count in enumerate(counts):
        for member in range(count):
            expected = [
                p for p, (c, m) in enumerate(forward) if (c[0], m[0]) == (component, member)
            ]
            assert sample_positions(plan, component, member, until).tolist() == expected


def test_step_and_rank_follow_global_batches_and_drop_the_tail():
    # 10 positions an epoch, 2 ranks of 2: two global batches an epoch, the last 2 unread.
    found = [step_and_rank(p, 10, world_size=2, batch_size=2) for p in range(20)]
    assert [f[0] for f in found if f[2]] == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert [f[1] for f in found if f[2]] == [0, 1] * 8
    assert [p for p, f in enumerate(found) if not f[2]] == [8, 9, 18, 19]
    assert step_and_rank(9, 10, 2, None) == (None, 1, True)
