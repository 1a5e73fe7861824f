"""The adaptive mixer: per-step losses in, weight changes out, as a pure state machine.

It sits between the training loop's feedback (which sums per-component losses over the
ranks) and a `Policy`. It counts steps, keeps the declared weights through `warmup_steps`,
asks the policy for new weights every `update_every` steps, applies the floor
`min_weight`, and turns the policy's weights into the mixture's sibling weights, to apply
from `delay` steps later. Its whole state is JSON, so a checkpoint resumes it exactly.

Example:
    >>> from mixplane.mix import MixtureSpec, MixtureTree
    >>> spec = MixtureSpec.parse({"seq_len": 4, "global_batch_size": 8, "components": {
    ...     "a": {"weight": 0.5}, "b": {"weight": 0.5}},
    ...     "policy": {"name": "static", "update_every": 2, "delay": 1}})
    >>> mixer = AdaptiveMixer(spec, MixtureTree(spec), np.array([100.0, 100.0]))
    >>> mixer.add(np.array([3.0, 1.0]), np.array([4.0, 4.0]))
    >>> mixer.end_step(0), mixer.end_step(1)
    (False, True)
    >>> mixer.decide(1) is None  # the static policy keeps its weights
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mixplane.errors import ConfigError
from mixplane.mix.policy import RENAMED_POLICIES, Observation, ValidationPoint, policy_class
from mixplane.mix.spec import MixtureSpec
from mixplane.mix.tree import MixtureTree
from mixplane.mix.weights import normalize


class AdaptiveMixer:
    """Decides the weight changes of a mixture with a `policy:` from observed losses.

    `leaf_tokens` are the tokens of each leaf (for the declared weights, the policy's
    prior). Losses and token counts come per leaf; the policy weighs the leaves, or the
    children of `group`.
    """

    def __init__(self, spec: MixtureSpec, tree: MixtureTree, leaf_tokens: np.ndarray):
        if spec.policy is None:
            raise ConfigError("this mixture has no policy: section")
        self.config = spec.policy
        self.tree = tree
        if self.config.group is None:
            self.names = list(tree.names)
            self.members = [[leaf] for leaf in range(len(tree.leaves))]
        else:
            node = tree.nodes.get(self.config.group)
            if node is None or not node.children:
                groups = [name for name, n in tree.nodes.items() if name and n.children]
                raise ConfigError(
                    f"policy group {self.config.group!r} is not a component with children; "
                    f"groups: {', '.join(groups) or 'none (leave group out)'}"
                )
            self.names = [child.path for child in node.children]
            self.members = [list(child.leaves) for child in node.children]
        count = len(self.names)
        if self.config.min_weight * count > 1:
            raise ConfigError(
                f"policy min_weight {self.config.min_weight} x {count} components is more "
                f"than 1; use at most {1 / count:.4g}"
            )
        declared = tree.leaf_weights(leaf_tokens)
        prior = normalize([declared[m].sum() for m in self.members], self.names)
        options = self.config.policy_options()
        self.policy = policy_class(self.config.name)(self.names, prior, options)
        self.loss = np.zeros(count)
        self.tokens = np.zeros(count)
        self.steps = 0  # steps in the current observation
        self.skipped = 0  # of them, steps left out for a non-finite loss
        self.validation: list[ValidationPoint] = []  # validation losses given in them
        self.next_step = 0

    # -- the training loop's side ----------------------------------------------------------

    def add(self, leaf_loss: np.ndarray, leaf_tokens: np.ndarray) -> None:
        """Add per-leaf loss sums and token counts (summed over ranks) to the observation.

        They must be finite (and the counts >= 0): a nan or inf would reach the policy's
        state and the weight log, and from there every later decision."""
        leaf_loss = np.asarray(leaf_loss, dtype=np.float64)
        leaf_tokens = np.asarray(leaf_tokens, dtype=np.float64)
        if not (np.all(np.isfinite(leaf_loss)) and np.all(np.isfinite(leaf_tokens))):
            raise ConfigError(
                f"step {self.next_step}: loss sums {leaf_loss.tolist()} and token counts "
                f"{leaf_tokens.tolist()} must be finite; the policy takes no nan or inf"
            )
        if np.any(leaf_tokens < 0):
            raise ConfigError(f"step {self.next_step}: negative token counts {leaf_tokens}")
        for index, leaves in enumerate(self.members):
            self.loss[index] += float(np.sum(leaf_loss[leaves]))
            self.tokens[index] += float(np.sum(leaf_tokens[leaves]))

    def add_validation(self, losses: np.ndarray) -> None:
        """Validation losses per token of the policy's components, measured at the step
        under way (nan for a component without one); after that step's `add`."""
        losses = np.asarray(losses, dtype=np.float64)
        if losses.shape != (len(self.names),) or np.any(np.isinf(losses)):
            raise ConfigError(
                f"validation losses must be one finite number (or nan: none) for each of "
                f"{', '.join(self.names)}; got {losses.tolist()}"
            )
        if not np.all(np.isnan(losses)):
            self.validation.append(ValidationPoint(self.next_step, losses, self.tokens.copy()))

    def end_step(self, step: int, skipped: bool = False) -> bool:
        """Step `step` is complete (`skipped`: its losses were left out, see
        `on_nonfinite`); True when an update is due (then call `decide`)."""
        if step != self.next_step:
            raise ConfigError(
                f"feedback for step {step} where step {self.next_step} was next: observe "
                "every step, in order, with the optimizer step's number"
            )
        self.next_step += 1
        self.steps += 1
        self.skipped += bool(skipped)
        return (step + 1) % self.config.update_every == 0

    def decide(self, step: int) -> dict[str, Any] | None:
        """Close the observation ending with `step`; the weight change it leads to, if any:
        `{"step", "weights", "details"}` as `set_weights` and the weight log take it."""
        observation = Observation(
            step, self.steps, self.loss.copy(), self.tokens.copy(), tuple(self.validation)
        )
        skipped = self.skipped
        self.loss[:] = 0.0
        self.tokens[:] = 0.0
        self.steps = 0
        self.skipped = 0
        self.validation = []
        if skipped == observation.steps:
            return None  # every step was left out: nothing observed, nothing to decide
        if step + 1 <= self.config.warmup_steps:
            record = getattr(self.policy, "record", None)
            if record is not None:
                record(observation)
            return None
        proposed = self.policy.update(observation)
        if proposed is None:
            return None
        weights = self.floored(np.asarray(proposed, dtype=np.float64))
        self.policy.weights = weights
        return {
            "step": step + self.config.delay,
            "weights": self.sibling_weights(weights),
            "details": {
                "decided_at": step,
                "policy": self.config.name,
                "components": list(self.names),
                "policy_weights": weights.tolist(),
                "loss": observation.loss.tolist(),
                "tokens": observation.tokens.tolist(),
                "skipped_steps": skipped,
                **(
                    {"validation": _points_json(observation.validation)}
                    if observation.validation
                    else {}
                ),
            },
        }

    # -- weights ---------------------------------------------------------------------------

    def floored(self, proposed: np.ndarray) -> np.ndarray:
        """Normalized weights with every component at least `min_weight`."""
        if proposed.shape != (len(self.names),):
            raise ConfigError(
                f"policy {self.config.name!r} returned {proposed.shape[0]} weights for "
                f"{len(self.names)} components"
            )
        floor = self.config.min_weight
        return floor + (1.0 - floor * len(self.names)) * normalize(proposed, self.names)

    def sibling_weights(self, weights: np.ndarray) -> dict[str, float]:
        """The policy's weights as the mixture's sibling weights (what `set_weights` takes):
        for a group, its children's; for leaves, every group's children get the sum of the
        leaves below them."""
        if self.config.group is not None:
            return {name: float(w) for name, w in zip(self.names, weights, strict=True)}
        leaf = np.asarray(weights, dtype=np.float64)
        result: dict[str, float] = {}
        for node in self.tree.nodes.values():
            sums = [float(leaf[list(child.leaves)].sum()) for child in node.children]
            if node.children and sum(sums) <= 0:
                sums = [1.0] * len(sums)  # the group gets no share; any valid weights do
            for child, value in zip(node.children, sums, strict=True):
                result[child.path] = value
        return result

    # -- state -----------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.config.name,
            "components": list(self.names),
            "weights": self.policy.weights.tolist(),
            "policy_state": self.policy.state_dict(),
            "loss": self.loss.tolist(),
            "tokens": self.tokens.tolist(),
            "steps": self.steps,
            "skipped": self.skipped,
            "validation": _points_json(self.validation, tokens=True),
            "next_step": self.next_step,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        saved = RENAMED_POLICIES.get(state.get("policy"), state.get("policy"))
        if saved != self.config.name or state.get("components") != self.names:
            raise ConfigError(
                f"the saved policy state is for policy {state.get('policy')!r} over "
                f"{state.get('components')}, not {self.config.name!r} over {self.names}"
            )
        self.policy.weights = np.asarray(state["weights"], dtype=np.float64)
        self.policy.load_state_dict(state["policy_state"])
        self.loss = np.asarray(state["loss"], dtype=np.float64)
        self.tokens = np.asarray(state["tokens"], dtype=np.float64)
        self.steps = int(state["steps"])
        # (states saved before skipping and validation losses existed have neither)
        self.skipped = int(state.get("skipped", 0))
        self.validation = [
            ValidationPoint(
                int(point["step"]),
                np.array([np.nan if v is None else v for v in point["loss"]], dtype=np.float64),
                np.asarray(point["tokens"], dtype=np.float64),
            )
            for point in state.get("validation", [])
        ]
        self.next_step = int(state["next_step"])


def _points_json(
    points: list[ValidationPoint] | tuple[ValidationPoint, ...], tokens: bool = False
) -> list[dict[str, Any]]:
    """Validation points as JSON (a missing loss is null, never NaN)."""
    return [
        {
            "step": point.step,
            "loss": [None if np.isnan(v) else float(v) for v in point.loss],
            **({"tokens": point.tokens.tolist()} if tokens else {}),
        }
        for point in points
    ]
