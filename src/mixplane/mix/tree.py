"""Nested components flattened into leaves, and leaf weights from the tree of sibling weights.

Only leaves are packed and blended; groups exist to share a predicate and to split a weight.
A leaf's name is its path (`code/python`); its predicate is the AND of its ancestors' ones.

Example:
    >>> from mixplane.mix.spec import MixtureSpec
    >>> spec = MixtureSpec.parse({"seq_len": 8, "components": {
    ...     "web": {"weight": 0.6, "where": "source = 'web'", "components": {
    ...         "en": {"where": "language = 'en'", "weight": 3},
    ...         "de": {"where": "language = 'de'", "weight": 1}}},
    ...     "wiki": {"weight": 0.4}}})
    >>> tree = MixtureTree(spec)
    >>> [leaf.name for leaf in tree.leaves]
    ['web/en', 'web/de', 'wiki']
    >>> tree.leaves[0].where
    "(source = 'web') AND (language = 'en')"
    >>> tree.leaf_weights([10, 10, 10]).round(2).tolist()
    [0.45, 0.15, 0.4]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mixplane.errors import ConfigError
from mixplane.mix.spec import ComponentSpec, MixtureSpec, Weighting
from mixplane.mix.weights import cap_by_epochs, normalize, temperature_weights, unimax_weights
from mixplane.refs import format_ref, parse_ref

EXPLICIT = Weighting()


@dataclass(frozen=True)
class Leaf:
    """A component that is packed and blended: its full name, predicate, datasets (the
    references it reads after inheritance, None for every dataset) and epoch policy."""

    name: str
    where: str | None
    datasets: tuple[str, ...] | None
    max_epochs: float | None
    on_exhausted: str


@dataclass(frozen=True)
class Node:
    path: str
    spec: ComponentSpec | None  # None for the root
    weighting: Weighting
    children: tuple[Node, ...]
    leaves: tuple[int, ...]  # indices of the leaves below (a leaf: itself)


class MixtureTree:
    """The components of a mixture as a tree; checks names and weights up front."""

    def __init__(self, spec: MixtureSpec):
        self.spec = spec
        self.leaves: list[Leaf] = []
        self.nodes: dict[str, Node] = {}
        datasets = tuple(spec.datasets) if spec.datasets else None
        defaults = (None, datasets, spec.max_epochs, spec.on_exhausted)
        self.root = self._build("", None, spec.components, spec.weighting, defaults)
        for entry in spec.schedule:
            self.check_overrides(entry.weights, where=f"schedule step {entry.step}")

    @property
    def names(self) -> list[str]:
        return [leaf.name for leaf in self.leaves]

    def _build(self, path, spec, children, weighting, inherited) -> Node:
        where, datasets, max_epochs, on_exhausted = inherited
        if spec is not None:
            where = _and(where, spec.where)
            datasets = _restrict(datasets, spec.datasets, path)
            max_epochs = spec.max_epochs if spec.max_epochs is not None else max_epochs
            on_exhausted = spec.on_exhausted or on_exhausted
        if not children:
            self.leaves.append(Leaf(path, where, datasets, max_epochs, on_exhausted))
            node = Node(path, spec, EXPLICIT, (), (len(self.leaves) - 1,))
            self.nodes[path] = node
            return node
        weighting = weighting or EXPLICIT
        self._check_child_weights(path, children, weighting)
        inherited = (where, datasets, max_epochs, on_exhausted)
        built = tuple(
            self._build(_join(path, name), child, child.components, child.weighting, inherited)
            for name, child in children.items()
        )
        node = Node(path, spec, weighting, built, tuple(i for c in built for i in c.leaves))
        self.nodes[path] = node
        return node

    def _check_child_weights(self, path: str, children: Mapping[str, ComponentSpec], weighting):
        group = f"the children of {path!r}" if path else "the top-level components"
        given = [name for name, child in children.items() if child.weight is not None]
        if weighting.method == "explicit":
            missing = [_join(path, n) for n, c in children.items() if c.weight is None]
            if missing and len(children) > 1:
                raise ConfigError(
                    f"{', '.join(missing)}: no weight; give every one of {group} a weight, or "
                    "set weighting (natural, temperature, unimax) on their parent"
                )
        elif given:
            raise ConfigError(
                f"{', '.join(_join(path, n) for n in given)}: weight given, but {group} take "
                f"{weighting.method} weights; remove the weight or the weighting"
            )
        capped = weighting.method == "unimax" or weighting.max_epochs is not None
        if capped and self.spec.total_tokens is None:
            raise ConfigError(
                f"{weighting.method} weighting with max_epochs needs total_tokens "
                "(the training budget) in the mixture"
            )

    def check_overrides(self, weights: Mapping[str, float], where: str = "weights") -> None:
        """Names must exist and cover whole sibling groups; weights must be >= 0."""
        unknown = [name for name in weights if name not in self.nodes or name == ""]
        if unknown:
            known = ", ".join(name for name in self.nodes if name)
            raise ConfigError(f"{where}: unknown components {unknown} (known: {known})")
        for name, weight in weights.items():
            if not (np.isfinite(weight) and weight >= 0):
                raise ConfigError(f"{where}: weight of {name!r} must be >= 0, got {weight}")
        for node in self.nodes.values():
            named = [child.path for child in node.children if child.path in weights]
            if named and len(named) < len(node.children):
                missing = [c.path for c in node.children if c.path not in weights]
                raise ConfigError(
                    f"{where}: gives {named} but not their siblings {missing}; weights are "
                    "relative to siblings, so name the whole group"
                )
            if named:
                normalize([weights[p] for p in named], named)

    def leaf_weights(
        self,
        leaf_tokens: Sequence[float] | np.ndarray,
        overrides: Mapping[str, float] | None = None,
    ) -> np.ndarray:
        """Each leaf's share of all tokens, given each leaf's token count.

        `overrides` set sibling weights by component name (as in a schedule entry); other
        groups keep the weights of the spec.
        """
        tokens = np.asarray(leaf_tokens, dtype=np.float64)
        if tokens.shape != (len(self.leaves),):
            raise ValueError(f"expected {len(self.leaves)} token counts, got {tokens.shape}")
        overrides = overrides or {}
        result = np.zeros(len(self.leaves), dtype=np.float64)
        self._assign(self.root, 1.0, tokens, overrides, result)
        return result

    def _assign(self, node: Node, share: float, tokens, overrides, result) -> None:
        if not node.children:
            result[node.leaves[0]] = share
            return
        weights = self._group_weights(node, share, tokens, overrides)
        for child, weight in zip(node.children, weights, strict=True):
            self._assign(child, share * weight, tokens, overrides, result)

    def _group_weights(self, node: Node, share: float, tokens, overrides) -> np.ndarray:
        children = node.children
        names = [child.path for child in children]
        if children[0].path in overrides:
            return normalize([overrides[name] for name in names], names)
        sizes = np.array([tokens[list(child.leaves)].sum() for child in children])
        method = node.weighting
        if method.method == "explicit":
            given = [1.0 if c.spec.weight is None else c.spec.weight for c in children]
            return normalize(given, names)
        budget = (self.spec.total_tokens or 0.0) * share
        if method.method == "unimax":
            return unimax_weights(sizes, budget, method.max_epochs)
        weights = temperature_weights(
            sizes, 1.0 if method.method == "natural" else method.temperature
        )
        if method.max_epochs is not None:
            weights = cap_by_epochs(weights, sizes, budget, method.max_epochs)
        return weights


def _join(path: str, name: str) -> str:
    return f"{path}/{name}" if path else name


def _and(outer: str | None, inner: str | None) -> str | None:
    if outer is None or inner is None:
        return inner if outer is None else outer
    return f"({outer}) AND ({inner})"


def _restrict(outer, inner, path) -> tuple[str, ...] | None:
    """A component's datasets within the ones it inherits (from its parents or the mixture).

    Datasets are matched by name: a version pinned on either side applies, and two different
    pins of one dataset are an error, as is a dataset the inherited list leaves out.
    """
    if inner is None:
        return outer
    if outer is None:
        return tuple(inner)
    inherited = dict(parse_ref(ref) for ref in outer)
    outside = [ref for ref in inner if parse_ref(ref)[0] not in inherited]
    if outside:
        raise ConfigError(
            f"{path}: datasets {outside} are outside the ones it inherits {list(outer)} "
            "(from its parent group or the mixture's `datasets`)"
        )
    refs = []
    for ref in inner:
        name, version = parse_ref(ref)
        pinned = inherited[name]
        if version is not None and pinned is not None and version != pinned:
            raise ConfigError(
                f"{path}: {ref} conflicts with {format_ref(name, pinned)}, which it inherits "
                "(from its parent group or the mixture's `datasets`); pin one version"
            )
        refs.append(format_ref(name, pinned if version is None else version))
    return tuple(refs)
