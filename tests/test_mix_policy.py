"""Adaptive mixing policies against a simulated learner whose loss curves are known.

Component k's loss per token after it has had n tokens is
L_k(n) = eps_k + beta_k * (n + N0)^-alpha_k: `easy` learns fast and flattens early (high
alpha), `hard` learns slowly for longer (low alpha), `noise` never learns (beta = 0, its
loss is log(vocabulary size)). The driver runs a policy the way the adaptive mixer does:
each update, component k gets weight_k * TOKENS_PER_UPDATE tokens, its loss sum comes from
the curve at the tokens it has had, the policy proposes weights, and the driver sets
`policy.weights` to them as the adaptive mixer's `floored` makes them (normalized, the
floor applied).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mixplane.errors import ConfigError
from mixplane.mix import MixtureSpec, MixtureTree
from mixplane.mix.adaptive import AdaptiveMixer
from mixplane.mix.policy import (
    BUILTIN_POLICIES,
    Observation,
    Policy,
    ValidationPoint,
    policy_class,
    reference_losses_from_log,
)
from mixplane.mix.policy.ado import EARLIER, Ado, fit_power_law
from mixplane.mix.policy.excess_loss import ExcessLoss
from mixplane.mix.policy.odm import Odm, exploration
from mixplane.mix.policy.spec import PolicySpec
from mixplane.mix.weights import normalize

NAMES = ["easy", "hard", "noise"]
VOCAB = 32000
TOKENS_PER_UPDATE = 2e4
REFERENCES = {"easy": 1.5, "hard": 2.5, "noise": math.log(VOCAB)}


def small_mixture(policy: dict, names: Sequence[str] = ("a", "b")) -> MixtureSpec:
    """A mixture of equally weighted `names` with `policy` (deciding every step, applied
    the next unless it says otherwise) and no data: what the mixer and policies need."""
    return MixtureSpec.parse(
        {
            "seq_len": 4,
            "global_batch_size": 8,
            "components": {name: {"weight": 1.0} for name in names},
            "policy": {"update_every": 1, "delay": 1} | policy,
        }
    )


def mixer(policy: dict, names: Sequence[str] = ("a", "b")) -> AdaptiveMixer:
    """The adaptive mixer of `small_mixture(policy, names)`, 100 tokens in each component."""
    spec = small_mixture(policy, names)
    return AdaptiveMixer(spec, MixtureTree(spec), np.full(len(names), 100.0))


@dataclass(frozen=True)
class Learner:
    eps: np.ndarray
    beta: np.ndarray
    alpha: np.ndarray
    n0: float = 1000.0

    def loss(self, seen: np.ndarray) -> np.ndarray:
        return self.eps + self.beta * (seen + self.n0) ** -self.alpha

    def speed(self, seen: np.ndarray) -> np.ndarray:
        """-dL/dn, the true learning speed."""
        return self.alpha * self.beta * (seen + self.n0) ** (-self.alpha - 1)


LEARNER = Learner(
    eps=np.array([1.0, 2.0, math.log(VOCAB)]),
    beta=np.array([3000.0, 8.0, 0.0]),
    alpha=np.array([0.8, 0.3, 0.5]),
)


class Driver:
    """Feeds a policy observations from the learner, as the adaptive mixer would."""

    def __init__(self, policy: Policy, min_weight: float = 0.0, learner: Learner = LEARNER):
        self.policy = policy
        # the adaptive mixer's own floor: a static mixer over the same components
        self.mixer = mixer({"name": "static", "min_weight": min_weight}, policy.names)
        self.learner = learner
        self.seen = np.zeros(len(policy.names))
        self.step = 0
        self.proposals: list[np.ndarray] = []

    def observe(self) -> Observation:
        tokens = self.policy.weights * TOKENS_PER_UPDATE
        self.seen = self.seen + tokens
        observation = Observation(self.step, 1, tokens * self.learner.loss(self.seen), tokens)
        self.step += 1
        return observation

    def apply(self, proposed: np.ndarray | None) -> None:
        if proposed is None:
            return
        self.proposals.append(np.array(proposed, dtype=np.float64))
        self.policy.weights = self.mixer.floored(np.asarray(proposed, dtype=np.float64))

    def warm_up(self, observations: int) -> None:
        for _ in range(observations):
            self.policy.record(self.observe())

    def run(self, updates: int) -> np.ndarray:
        """The weights after each of `updates` updates."""
        trajectory = []
        for _ in range(updates):
            self.apply(self.policy.update(self.observe()))
            trajectory.append(self.policy.weights.copy())
        return np.array(trajectory)


def make(name: str, prior: np.ndarray | None = None, **options: Any) -> Policy:
    if name == "excess_loss":
        options.setdefault("reference_losses", REFERENCES)
    cls = policy_class(name)
    prior = np.full(len(NAMES), 1 / len(NAMES)) if prior is None else prior
    return cls(list(NAMES), prior, cls.Options(**options))


def plain(value: Any) -> bool:
    """Only JSON's own types (no numpy scalars, which json.dumps would pass as floats)."""
    if isinstance(value, dict):
        return all(type(k) is str and plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(plain(v) for v in value)
    return value is None or type(value) in (str, int, float, bool)


# -- ADO ------------------------------------------------------------------------------------


def power_law_points(alpha: float, fraction: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Points of eps + beta n^-alpha whose eps is `fraction` of the smallest loss (3.0)."""
    tokens = 1e3 * 1.2 ** np.arange(40)
    eps = fraction * 3.0
    beta = (3.0 - eps) * tokens[-1] ** alpha
    return tokens, eps + beta * tokens**-alpha, eps, beta


@pytest.mark.parametrize(
    ("alpha", "fraction"),
    [(0.5, 0.4), (0.8, 0.0), (0.3, 0.9), (1.2, 0.55), (0.642, 0.722), (1.5, 0.996)],
)
def test_fit_recovers_a_power_law_on_its_grid(alpha, fraction):
    tokens, losses, eps, beta = power_law_points(alpha, fraction)
    fit = fit_power_law(tokens, losses)
    assert fit.alpha == pytest.approx(alpha, abs=1e-12)
    assert fit.eps == pytest.approx(eps, abs=1e-12)
    assert fit.beta == pytest.approx(beta, rel=1e-9)
    assert fit.huber < 1e-20


@pytest.mark.parametrize(("alpha", "eps", "beta"), [(0.37, 1.234, 57.0), (0.91, 0.3, 800.0)])
def test_fit_off_its_grid_follows_the_curve_and_its_slope(alpha, eps, beta):
    tokens = 1e3 * 1.2 ** np.arange(40)
    losses = eps + beta * tokens**-alpha
    fit = fit_power_law(tokens, losses)
    # within the grid's resolution (steps of 0.002 in alpha and of 0.2% of the loss in eps)
    assert np.max(np.abs(np.array([fit.loss(n) for n in tokens]) / losses - 1)) < 3e-3
    true_speed = alpha * beta * tokens[-1] ** (-alpha - 1)
    assert fit.speed(tokens[-1]) == pytest.approx(true_speed, rel=0.05)


def test_fit_ignores_a_loss_spike_and_needs_two_token_counts():
    tokens, losses, eps, beta = power_law_points(0.5, 0.4)
    spiked = losses.copy()
    spiked[20] *= 3.0  # one observation three times too high
    fit = fit_power_law(tokens, spiked)
    assert fit.alpha == pytest.approx(0.5, abs=0.01)
    assert fit_power_law(tokens[:1], losses[:1]) is None
    assert fit_power_law(np.array([5.0, 5.0, 5.0]), np.array([3.0, 2.0, 1.0])) is None


def test_ado_one_update_by_hand():
    """The defaults (the official code's choices): every curve against the tokens of all
    components, credit sqrt(h (1 - h)), the preference floored, then smoothed with the time
    average of the preferences so far. Track the points, credit and average from the
    observations alone; the policy's preference and proposal match those computed here."""
    prior = np.array([0.5, 0.3, 0.2])
    policy = make("ado", prior, smoothing=0.8, credit_smoothing=0.7, preference_floor=0.05)
    driver = Driver(policy, min_weight=0.01)
    total, credit, average = 0.0, prior.copy(), prior.copy()
    points: list[list[tuple[float, float]]] = [[], [], []]

    def track(observation: Observation) -> None:
        nonlocal total, credit
        credit = 0.7 * credit + 0.3 * observation.tokens / observation.tokens.sum()
        total += observation.tokens.sum()
        for k in range(3):
            points[k].append((total, observation.loss[k] / observation.tokens[k]))

    def floored(rho: np.ndarray) -> np.ndarray:
        rho = np.maximum(rho / rho.sum(), 0.05)
        return rho / rho.sum()

    for _ in range(6):
        observation = driver.observe()
        track(observation)
        driver.apply(policy.update(observation))
        share = observation.steps / (observation.step + 1)
        average = (1 - share) * average + share * policy.preference

    observation = driver.observe()
    track(observation)
    proposed = policy.update(observation)

    rho = np.zeros(3)
    for k in range(3):
        n, loss = (np.array(column) for column in zip(*points[k], strict=True))
        fit = fit_power_law(n, loss)
        credit_k = (credit[k] * (1 - credit[k])) ** 0.5
        rho[k] = prior[k] * fit.alpha * fit.beta * total ** (-fit.alpha - 1) * credit_k
    np.testing.assert_allclose(policy.preference, floored(rho), rtol=0, atol=1e-9)
    np.testing.assert_allclose(proposed, 0.8 * average + 0.2 * floored(rho), rtol=0, atol=1e-9)
    assert policy.total == total


def test_ado_earlier_variant_one_update_by_hand():
    """x_axis: own_tokens, smoothing_base: previous_weights, preference_floor: 0 (the ADO
    of earlier versions): each curve against the component's own tokens, smoothed with
    the previous weights."""
    prior = np.array([0.5, 0.3, 0.2])
    policy = make("ado", prior, smoothing=0.8, credit_smoothing=0.7, **EARLIER)
    driver = Driver(policy, min_weight=0.01)
    seen, credit = np.zeros(3), prior.copy()
    points: list[list[tuple[float, float]]] = [[], [], []]

    def track(observation: Observation) -> None:
        nonlocal seen, credit
        credit = 0.7 * credit + 0.3 * observation.tokens / observation.tokens.sum()
        seen = seen + observation.tokens
        for k in range(3):
            points[k].append((seen[k], observation.loss[k] / observation.tokens[k]))

    for _ in range(6):
        observation = driver.observe()
        track(observation)
        driver.apply(policy.update(observation))

    observation = driver.observe()
    track(observation)
    before = policy.weights.copy()
    proposed = policy.update(observation)

    rho = np.zeros(3)
    for k in range(3):
        n, loss = (np.array(column) for column in zip(*points[k], strict=True))
        fit = fit_power_law(n, loss)
        rho[k] = prior[k] * fit.alpha * fit.beta * seen[k] ** (-fit.alpha - 1) * credit[k] ** 0.5
    rho /= rho.sum()
    np.testing.assert_allclose(policy.preference, rho, rtol=0, atol=1e-9)
    np.testing.assert_allclose(proposed, 0.8 * before + 0.2 * rho, rtol=0, atol=1e-9)
    np.testing.assert_allclose(policy.seen, seen, rtol=1e-15)
    assert policy.fits[0].alpha > policy.fits[1].alpha  # easy's curve is steeper than hard's


def test_ado_credit_with_and_without_the_rest():
    """credit: share_times_rest (the default) multiplies by sqrt(h (1 - h)), share by
    sqrt(h)."""
    plain, rest = make("ado", credit="share"), make("ado")
    driver = Driver(plain)
    for _ in range(5):
        observation = driver.observe()
        driver.apply(plain.update(observation))
        rest.update(observation)
    h = plain.credit
    assert np.array_equal(h, rest.credit)
    # easy and hard are fitted and above the floor: their ratio moves by sqrt(1 - h)
    ratio = (rest.preference[0] / rest.preference[1]) / (plain.preference[0] / plain.preference[1])
    assert ratio == pytest.approx(np.sqrt((1 - h[0]) / (1 - h[1])), rel=1e-9)


def test_ado_keeps_the_prior_until_a_curve_can_be_fitted():
    prior = np.array([0.5, 0.3, 0.2])
    policy = make("ado", prior, min_points=4)
    driver = Driver(policy)
    driver.run(3)  # 3 points each: no fit yet, the preference is the prior
    np.testing.assert_array_equal(policy.preference, prior)
    np.testing.assert_allclose(policy.weights, prior, rtol=1e-15)
    driver.run(1)
    assert policy.preference[0] > prior[0]  # easy is fitted, and the fastest


@pytest.fixture(scope="module")
def ado_run() -> tuple[np.ndarray, Driver]:
    policy = make("ado", **EARLIER)
    driver = Driver(policy, min_weight=0.01)
    return driver.run(200), driver


@pytest.fixture(scope="module")
def ado_official_run() -> tuple[np.ndarray, Driver]:
    driver = Driver(make("ado"), min_weight=0.01)
    return driver.run(200), driver


def test_ado_earlier_variant_settles_noise_well_above_the_floor(ado_run):
    trajectory, driver = ado_run
    noise = trajectory[:, 2]
    # noise's preference (zero learning speed) is ~0; floored and smoothed every update,
    # its weight settles at the fixed point of w = m + (1 - K m) * smoothing * w
    settled = 0.01 / (1 - 0.9 * (1 - 3 * 0.01))
    assert driver.policy.preference[2] < 0.005
    assert noise[-1] == pytest.approx(settled, rel=0.03)
    assert noise[-1] < noise[0] / 3
    assert np.all(trajectory[40:, 2] < 0.085)


def test_ado_sends_noise_toward_the_preference_floor(ado_official_run):
    """With the defaults, noise's preference sits at the floor and its weight follows the
    time average of the preferences down toward it, far below the earlier variant's."""
    trajectory, driver = ado_official_run
    noise = trajectory[:, 2]
    assert driver.policy.preference[2] == pytest.approx(0.01, rel=0.01)
    assert np.all(np.diff(noise[5:]) < 0)
    assert noise[-1] < 0.025  # 0.01 + 0.97 x (the average, still above 0.01)
    assert noise[-1] < 0.3 * 0.01 / (1 - 0.9 * (1 - 3 * 0.01))


@pytest.mark.parametrize("run", ["ado_run", "ado_official_run"])
def test_ado_favours_easy_early_and_hard_later(run, request):
    trajectory, driver = request.getfixturevalue(run)
    easy, hard = trajectory[:, 0], trajectory[:, 1]
    peak = int(np.argmax(easy))
    assert peak < 50 and easy[peak] > 0.5  # from 1/3: easy learns fastest at first
    assert easy[10] > hard[10]
    assert easy[-1] < easy[peak] - 0.1  # its curve has flattened
    assert driver.policy.preference[1] > driver.policy.preference[0]  # hard is faster now
    assert hard[-1] > hard[100] + 0.02  # and hard gains weight
    # which is what the learner's true speeds say (at the tokens each had by then)
    assert LEARNER.speed(np.full(3, 1e5))[0] > LEARNER.speed(np.full(3, 1e5))[1]
    assert LEARNER.speed(driver.seen)[0] < LEARNER.speed(driver.seen)[1]


def test_ado_learns_from_warm_up_observations():
    warmed = make("ado")
    driver = Driver(warmed)
    driver.warm_up(5)
    np.testing.assert_array_equal(warmed.weights, warmed.prior)  # record decides nothing
    assert [len(points) for points in warmed.history_tokens] == [5, 5, 5]
    driver.run(1)
    assert warmed.preference[0] > 0.5  # fitted on the warm-up's points already
    cold = make("ado")
    Driver(cold).run(1)
    np.testing.assert_array_equal(cold.preference, cold.prior)


@pytest.mark.parametrize("axis", ["own_tokens", "total_tokens"])
def test_ado_history_is_thinned_oldest_first(axis):
    policy = make("ado", max_history=10, x_axis=axis)
    Driver(policy).run(11)
    tokens = policy.history_tokens[0]
    assert len(tokens) <= 10
    first = TOKENS_PER_UPDATE / 3 if axis == "own_tokens" else TOKENS_PER_UPDATE
    assert tokens[0] == pytest.approx(first)  # the first point stays
    now = policy.seen[0] if axis == "own_tokens" else policy.total
    assert tokens[-1] == pytest.approx(now)  # and the recent ones
    assert tokens == sorted(tokens)


def test_ado_fits_validation_losses_when_asked():
    """fit_on: validation: the curves are the validation losses given (here the learner's
    true curve, while the training loss says nothing), at the tokens of their step."""
    trained = make("ado", fit_on="validation")
    untouched = make("ado")
    seen, total, given, at = np.zeros(3), 0.0, [], []
    tokens = np.full(3, TOKENS_PER_UPDATE / 3)
    for step in range(8):
        seen, total = seen + tokens, total + tokens.sum()
        flat = np.full(3, 4.0) * tokens  # a training loss without information
        points = ()
        if step % 2:
            points = (ValidationPoint(step, LEARNER.loss(seen), tokens),)
            given.append(LEARNER.loss(seen))
            at.append(total)
        observation = Observation(step, 1, flat, tokens, points)
        for policy in (trained, untouched):
            policy.update(observation)
    np.testing.assert_array_equal(trained.history_loss, np.array(given).T)
    assert trained.history_tokens == [at] * 3
    assert trained.preference[0] > 0.5  # easy's validation curve is the steepest
    assert untouched.history_loss[0] == [4.0] * 8
    assert untouched.preference[0] < 0.5  # flat training losses: no one learns


# -- excess loss (not DoReMi) -----------------------------------------------------------------


def test_excess_loss_one_step_by_hand():
    references = {"easy": 1.5, "hard": 2.5, "noise": 10.0}
    policy = make("excess_loss", reference_losses=references, eta=0.7, uniform_mix=0.01)
    policy.weights = np.array([0.5, 0.3, 0.2])
    # easy 1.5 above its reference, hard 0.5 below, noise had no tokens
    observation = Observation(9, 10, np.array([300.0, 200.0, 0.0]), np.array([100.0, 100.0, 0]))
    excess = np.array([1.5, 0.0, 0.0])
    expected = policy.weights * np.exp(0.7 * excess)
    expected = 0.99 * expected / expected.sum() + 0.01 / 3
    np.testing.assert_allclose(policy.excess(observation), excess, rtol=0, atol=1e-15)
    np.testing.assert_allclose(policy.update(observation), expected, rtol=0, atol=1e-12)


def test_excess_loss_above_reference_gains_weight_the_others_lose_it():
    # hard's loss stays above 1.0; easy's stays below 10; noise's is exactly its reference
    references = {"easy": 10.0, "hard": 1.0, "noise": math.log(VOCAB)}
    policy = make("excess_loss", reference_losses=references, eta=0.1)
    trajectory = Driver(policy).run(40)
    assert np.all(np.diff(trajectory[:, 1]) > 0)
    assert np.all(np.diff(trajectory[:, 0]) < 0)
    assert np.all(np.diff(trajectory[:, 2]) < 0)
    assert trajectory[-1, 1] > 0.9


def test_excess_loss_names_the_missing_references():
    with pytest.raises(ConfigError, match=r"no reference loss for hard, noise.*easy, hrad"):
        make("excess_loss", reference_losses={"easy": 1.0, "hrad": 2.0})
    with pytest.raises(ConfigError, match="no reference loss for b"):
        mixer({"name": "excess_loss", "reference_losses": {"a": 2.0}})


def test_doremi_is_refused_with_what_it_is_and_a_state_saved_under_it_loads():
    """`doremi` named a method this is not: the name is refused, saying what the policy is
    and what to write; a state saved under the old name resumes under the new one."""
    references = {"a": 2.0, "b": 3.0}
    with pytest.raises(ConfigError, match=r"policy 'doremi' is now 'excess_loss': .*not DoReMi"):
        small_mixture({"name": "doremi", "reference_losses": references})
    policy = {"name": "excess_loss", "reference_losses": references}
    through = mixer(policy)
    through.add(np.array([30.0, 20.0]), np.array([10.0, 10.0]))
    through.end_step(0)
    change = through.decide(0)
    saved = through.state_dict() | {"policy": "doremi"}  # as an earlier version saved it
    resumed = mixer(policy)
    resumed.load_state_dict(saved)
    assert resumed.policy.weights.tolist() == change["details"]["policy_weights"]


def test_reference_losses_from_records_already_read():
    flat = [
        {"names": ["a", "b"], "loss": [30.0, 8.0], "tokens": [10.0, 4.0]},
        {"names": ["a", "b"], "loss": [10.0, 0.0], "tokens": [10.0, 0.0]},
    ]
    assert reference_losses_from_log(flat) == {"a": 2.0, "b": 2.0}
    assert reference_losses_from_log(flat, last=1) == {"a": 1.0}  # b had no tokens
    logged = [
        {
            "step": 108,
            "weights": {"a": 0.6, "b": 0.4},
            "details": {"components": ["a", "b"], "loss": [12.0, 9.0], "tokens": [4.0, 3.0]},
        }
    ]
    assert reference_losses_from_log(logged) == {"a": 3.0, "b": 3.0}
    with pytest.raises(ConfigError, match="record 1 has no per-component losses"):
        reference_losses_from_log([{"step": 5, "weights": {"a": 1.0}}])


# -- ODM ------------------------------------------------------------------------------------


def test_odm_favours_noise():
    """The known negative control: with the loss as reward, the component that never
    learns (the highest loss) ends with the largest weight."""
    trajectory = Driver(make("odm", np.array([0.5, 0.3, 0.2]))).run(400)
    assert np.all(np.argmax(trajectory[10:], axis=1) == 2)
    assert trajectory[-1, 2] > 0.4


def test_odm_explores_every_component():
    driver = Driver(make("odm", np.array([0.5, 0.3, 0.2])))
    driver.run(200)
    for t, proposed in enumerate(driver.proposals, start=1):
        explore = min(1 / 3, math.sqrt(math.log(3) / (3 * t)))
        assert exploration(3, t) == explore
        assert proposed.min() >= explore - 1e-15
    np.testing.assert_allclose(driver.proposals[0], np.full(3, 1 / 3), rtol=1e-15)


@pytest.mark.parametrize("clock", ["steps", "updates"])
def test_odm_one_step_by_hand(clock):
    """clock: steps (the paper's): t counts steps, and the softmax's temperature is the
    rate the current weights were drawn with; clock: updates (earlier versions): t counts
    updates, and eps_t is both. Here each update sees 10 steps."""
    policy = make("odm", np.array([0.5, 0.3, 0.2]), smoothing=0.6, clock=clock)
    for update in range(7):
        observation = Observation(10 * update + 9, 10, np.array([30.0, 20, 50]), np.full(3, 10.0))
        policy.weights = normalize(policy.update(observation))
    rewards, weights = policy.rewards.copy(), policy.weights.copy()
    observation = Observation(79, 10, np.array([30.0, 0.0, 50.0]), np.array([10.0, 0.0, 5.0]))
    # hard had no tokens: it keeps its reward estimate
    expected_rewards = rewards.copy()
    expected_rewards[0] = 0.6 * rewards[0] + 0.4 * 3.0 / weights[0]
    expected_rewards[2] = 0.6 * rewards[2] + 0.4 * 10.0 / weights[2]
    if clock == "steps":
        explore, temperature = exploration(3, 80), exploration(3, 70)
    else:
        explore = temperature = exploration(3, 8)
    assert policy.rate == (exploration(3, 70) if clock == "steps" else exploration(3, 7))
    soft = np.exp(temperature * expected_rewards)
    expected = (1 - 3 * explore) * soft / soft.sum() + explore
    proposed = policy.update(observation)
    np.testing.assert_allclose(policy.rewards, expected_rewards, rtol=1e-15)
    np.testing.assert_allclose(proposed, expected, rtol=0, atol=1e-12)
    assert proposed.min() >= explore - 1e-15
    assert policy.state_dict()["rate"] == explore


def test_earlier_states_resume_only_under_the_options_that_made_them():
    """A state saved before ado and odm took the papers' variants by default carries no
    variant: it resumes exactly under the earlier options, and is refused, saying which
    to set, under the new defaults."""
    earlier_ado = make("ado", **EARLIER)
    earlier_odm = make("odm", clock="updates")
    for policy in (earlier_ado, earlier_odm):
        Driver(policy).run(4)
    old_ado = {
        k: v
        for k, v in earlier_ado.state_dict().items()
        if k not in ("variant", "total", "average")
    }
    old_odm = {k: v for k, v in earlier_odm.state_dict().items() if k in ("rewards", "updates")}
    with pytest.raises(ConfigError, match="x_axis: own_tokens, smoothing_base: previous_weights"):
        make("ado").load_state_dict(old_ado)
    with pytest.raises(ConfigError, match="set clock: updates in the policy"):
        make("odm").load_state_dict(old_odm)
    for name, old, options, through in (
        ("ado", old_ado, EARLIER, earlier_ado),
        ("odm", old_odm, {"clock": "updates"}, earlier_odm),
    ):
        resumed = make(name, **options)
        resumed.weights = through.weights.copy()
        resumed.load_state_dict(old)
        np.testing.assert_array_equal(Driver(resumed).run(3), Driver(through).run(3))
    with pytest.raises(ConfigError, match="saved with x_axis: total_tokens"):
        make("ado", x_axis="own_tokens").load_state_dict(make("ado").state_dict())


# -- every policy ---------------------------------------------------------------------------

POLICIES = ["ado", "excess_loss", "odm", "custom_policies:Greedy"]


@pytest.mark.parametrize("name", POLICIES)
def test_state_is_plain_json_and_resumes_bit_identically(name):
    through = Driver(make(name), min_weight=0.01)
    through.warm_up(2)
    through.run(8)
    saved = json.dumps(
        {
            "weights": through.policy.weights.tolist(),
            "policy": through.policy.state_dict(),
            "seen": through.seen.tolist(),
            "step": through.step,
        },
        allow_nan=False,
    )
    assert plain(through.policy.state_dict())
    later = through.run(12)

    state = json.loads(saved)
    restored = make(name)
    restored.weights = np.array(state["weights"])
    restored.load_state_dict(state["policy"])
    resumed = Driver(restored, min_weight=0.01)
    resumed.seen, resumed.step = np.array(state["seen"]), state["step"]
    np.testing.assert_array_equal(resumed.run(12), later)
    assert json.dumps(restored.state_dict()) == json.dumps(through.policy.state_dict())


@pytest.mark.parametrize("name", POLICIES)
def test_same_observations_same_weights(name):
    first, second = make(name), make(name)
    driver = Driver(first, min_weight=0.01)
    for _ in range(15):
        observation = driver.observe()
        driver.apply(first.update(observation))
        proposed = second.update(observation)
        np.testing.assert_array_equal(proposed, driver.proposals[-1])
        second.weights = first.weights.copy()  # as the caller sets them after flooring
    assert json.dumps(first.state_dict()) == json.dumps(second.state_dict())


def test_builtin_policies_are_registered():
    assert {"ado": Ado, "excess_loss": ExcessLoss, "odm": Odm}.items() <= BUILTIN_POLICIES.items()
    assert policy_class("odm") is Odm


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"name": "ado", "smoothin": 0.5}, r"unknown key 'smoothin' \(valid: .*smoothing"),
        ({"name": "ado", "smoothing": 1.0}, "smoothing: Input should be less than 1"),
        ({"name": "ado", "smoothing": -0.1}, "smoothing: Input should be greater than"),
        ({"name": "ado", "credit_smoothing": 1}, "credit_smoothing"),
        ({"name": "ado", "min_points": 2}, "min_points"),
        ({"name": "ado", "huber_delta": 0}, "huber_delta"),
        ({"name": "ado", "min_points": 5, "max_history": 4}, "max_history .4. must be at least"),
        ({"name": "excess_loss"}, "missing key 'reference_losses'"),
        ({"name": "excess_loss", "reference_losses": {"a": -1.0}}, r"finite and >= 0: a=-1.0"),
        ({"name": "excess_loss", "reference_losses": {"a": float("nan")}}, "and >= 0: a=nan"),
        ({"name": "excess_loss", "reference_losses": {"a": 1}, "eta": 0}, "eta"),
        ({"name": "excess_loss", "reference_losses": {"a": 1}, "uniform_mix": 1.5}, "uniform_mix"),
        ({"name": "ado", "x_axis": "steps"}, "x_axis: Input should be 'total_tokens' or"),
        ({"name": "ado", "preference_floor": 1}, "preference_floor"),
        ({"name": "odm", "clock": "time"}, "clock: Input should be 'steps' or 'updates'"),
        ({"name": "odm", "smoothing": 1}, "smoothing"),
        ({"name": "odm", "eta": 1}, "unknown key 'eta'"),
        ({"name": "custom_policies:Greedy", "step": 1}, "unknown key 'step'.*step_size"),
        ({"name": "custom_policies:Greedy", "step_size": 0}, "step_size"),
    ],
)
def test_options_are_validated_when_the_mixture_is_read(policy, message):
    with pytest.raises(ValidationError, match=message):
        PolicySpec.model_validate(policy)


def test_a_policy_of_ones_own_by_import_path():
    cls = policy_class("custom_policies:Greedy")
    assert cls.__module__ == "custom_policies" and issubclass(cls, Policy)
    spec = PolicySpec.model_validate({"name": "custom_policies:Greedy", "step_size": 0.25})
    assert spec.policy_options().step_size == 0.25
    policy = cls(list(NAMES), np.full(3, 1 / 3), spec.policy_options())
    trajectory = Driver(policy).run(10)
    assert np.all(np.diff(trajectory[:, 2]) > 0)  # noise always has the highest loss
    assert policy.updates == 10
    with pytest.raises(ConfigError, match="cannot import policy"):
        policy_class("custom_policies:Missing")


def test_a_mixture_from_elsewhere_imports_no_policy_it_names(tmp_path, monkeypatch):
    """With `policies=` (a posted mixture), a name outside the built-ins and that list is
    refused before any import, in the same words whether its module exists or not."""
    import sys

    (tmp_path / "probe_on_path.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_suffix('.imported').touch()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    base = {"seq_len": 8, "global_batch_size": 4, "components": {"a": {"weight": 1.0}}}
    details = []
    for name in ("probe_on_path:Policy", "no_such_module_anywhere:Policy"):
        with pytest.raises(ConfigError, match="is not allowed here") as refused:
            MixtureSpec.parse(base | {"policy": {"name": name}}, policies=["other:Allowed"])
        details.append(str(refused.value).replace(name, "NAME"))
    assert details[0] == details[1]
    assert "probe_on_path" not in sys.modules
    assert not (tmp_path / "probe_on_path.imported").exists()
    allowed = MixtureSpec.parse(
        base | {"policy": {"name": "custom_policies:Greedy"}}, policies=["custom_policies:Greedy"]
    )
    assert allowed.policy.name == "custom_policies:Greedy"
    assert MixtureSpec.parse(base | {"policy": {"name": "ado"}}, policies=()).policy.name == "ado"


def test_huge_finite_proposals_keep_their_proportions():
    """A policy may propose any finite weights: [1e308, 1e308, 1, 1] is half and half on
    the first two, not (through an overflowing sum) uniform."""
    four = mixer({"name": "static", "min_weight": 0.01}, "abcd")
    floored = four.floored(np.array([1e308, 1e308, 1.0, 1.0]))
    np.testing.assert_allclose(floored, [0.49, 0.49, 0.01, 0.01], rtol=1e-12)
    siblings = four.sibling_weights(floored)
    assert siblings == pytest.approx({"a": 0.49, "b": 0.49, "c": 0.01, "d": 0.01})


@settings(max_examples=100, deadline=None)
@given(
    proposed=st.lists(st.floats(0, 1e300), min_size=2, max_size=6).filter(any),
    floor_share=st.floats(0, 1, exclude_max=True),
)
def test_floored_weights_keep_the_floor_the_sum_and_the_proportions(proposed, floor_share):
    """Every weight is at least min_weight, they sum to 1, and above the floor they keep
    the proposal's order and proportions (what is left after the floors, shared as
    proposed)."""
    count = len(proposed)
    floor = floor_share / count
    names = [f"c{index}" for index in range(count)]
    floored = mixer({"name": "static", "min_weight": floor}, names).floored(np.array(proposed))
    assert np.all(floored >= floor)
    assert floored.sum() == pytest.approx(1.0, abs=1e-12)
    scaled = np.array(proposed) / max(proposed)  # the shares, without overflowing the sum
    shares = scaled / scaled.sum()
    np.testing.assert_allclose(floored - floor, (1 - floor * count) * shares, rtol=0, atol=1e-12)
    order = np.argsort(proposed, kind="stable")
    assert np.all(np.diff(floored[order]) >= 0)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_the_mixer_takes_no_nonfinite_sums(bad):
    """A nan or inf never reaches a policy's state or the log: the mixer refuses it."""
    odm = mixer({"name": "odm", "update_every": 2})
    odm.add(np.array([30.0, 20.0]), np.array([10.0, 10.0]))
    with pytest.raises(ConfigError, match="must be finite"):
        odm.add(np.array([bad, 20.0]), np.array([10.0, 10.0]))
    with pytest.raises(ConfigError, match="must be finite"):
        odm.add(np.array([30.0, 20.0]), np.array([bad, 10.0]))
    assert odm.end_step(0) is False
    assert odm.end_step(1, skipped=True) is True
    change = odm.decide(1)
    assert change["details"]["skipped_steps"] == 1
    assert change["details"]["loss"] == [30.0, 20.0]
    json.dumps(odm.state_dict(), allow_nan=False)
    # a window of skipped steps only decides nothing
    assert odm.end_step(2, skipped=True) is False
    assert odm.end_step(3, skipped=True) is True
    assert odm.decide(3) is None
