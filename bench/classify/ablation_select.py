"""The random selection of the ablation: documents of the pool in a seeded random order,
taken until they hold exactly as many tokens as the classifier's top selection.

Every pool document carries `draw_S`, its place in seed S's random order (a permutation of
0..N-1). The selection is the longest prefix of that order that fits in the target, then,
from the documents after it in the same order, each one that still fits; if a gap remains,
one chosen document is swapped for a later one longer by exactly the gap
(`equal_token_fill`). It is written as a catalog predicate over `draw_S` (`Fill.predicate`),
so the loader streams it like any other selection.

Example:
    >>> fill = equal_token_fill([5, 3, 9, 2, 1], 11)
    >>> fill
    Fill(cut=2, dropped=(), fillers=(3, 4))
    >>> fill.predicate("draw_0")
    '(draw_0 < 2) OR draw_0 IN (3, 4)'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Fill:
    """Draw positions `0..cut-1` except `dropped`, and `fillers` (positions >= cut)."""

    cut: int
    dropped: tuple[int, ...]
    fillers: tuple[int, ...]

    def positions(self) -> list[int]:
        dropped = set(self.dropped)
        return [p for p in range(self.cut) if p not in dropped] + list(self.fillers)

    def predicate(self, column: str) -> str:
        """The catalog predicate selecting these draw positions of `column`."""
        prefix = f"{column} < {self.cut}"
        if self.dropped:
            prefix += f" AND {column} NOT IN ({_listed(self.dropped)})"
        if not self.fillers:
            return prefix
        return f"({prefix}) OR {column} IN ({_listed(self.fillers)})"


def equal_token_fill(tokens: Sequence[int], target: int) -> Fill:
    """Positions of `tokens` (token counts in draw order) holding exactly `target` tokens.

    The prefix is the longest one not above the target; the fillers are the later documents
    that fit in what remains, taken in order. A gap left then is closed by swapping the
    latest chosen document that can be for the first later one longer by exactly the gap.
    Raises `ValueError` when that fails too (the pool is too small for the target).

    Example:
        >>> equal_token_fill([4, 4, 9, 5], 9)
        Fill(cut=2, dropped=(1,), fillers=(3,))
    """
    if target < 0:
        raise ValueError(f"the target must be >= 0 tokens, got {target}")
    total, cut = 0, 0
    while cut < len(tokens) and total + tokens[cut] <= target:
        total += tokens[cut]
        cut += 1
    fillers = []
    for position in range(cut + 1, len(tokens)):
        if total == target:
            break
        if total + tokens[position] <= target:
            total += tokens[position]
            fillers.append(position)
    dropped: list[int] = []
    gap = target - total
    if gap:
        chosen = set(fillers)
        unchosen: dict[int, int] = {}
        for position in range(cut, len(tokens)):
            if position not in chosen:
                unchosen.setdefault(tokens[position], position)
        for position in reversed(list(range(cut)) + fillers):
            swap = unchosen.get(tokens[position] + gap)
            if swap is not None:
                if position < cut:
                    dropped.append(position)
                else:
                    fillers.remove(position)
                fillers = sorted(fillers + [swap])
                gap = 0
                break
    if gap:
        raise ValueError(
            f"the pool's documents ({sum(tokens)} tokens) cannot be filled to exactly "
            f"{target} tokens in draw order (reached {target - gap}): use a smaller keep_top"
        )
    return Fill(cut, tuple(dropped), tuple(fillers))


def _listed(positions: Sequence[int]) -> str:
    return ", ".join(str(int(p)) for p in positions)
