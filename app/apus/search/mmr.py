"""Maximal marginal relevance: near-duplicate passages give way, and the score says so.

Each passage's score is multiplied by `λ + (1 − λ)·novelty`, where novelty is 1 less its
highest word overlap (Jaccard) with a passage placed above it: relevance and novelty mixed
as MMR mixes them, as a product, so the adjusted score is what the list is ordered by. A
passage that repeats one above keeps λ of its score; one that shares nothing keeps all of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

# Relevance-biased setting from the product description: a passage wholly repeated above
# keeps 0.7 of its score, so diversity reorders near-ties and never buries a clear answer.
DEFAULT_LAMBDA = 0.7


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; two empty sets share nothing, so 0.0."""
    if not a and not b:
        return 0.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)


@dataclass(frozen=True)
class Diversified(Generic[T]):
    """An item in its MMR place: `factor` is what its score was multiplied by."""

    item: T
    factor: float


def mmr_order(
    items: Sequence[T],
    *,
    relevance: Callable[[T], float],
    tokens: Callable[[T], frozenset[str]],
    lam: float = DEFAULT_LAMBDA,
) -> list[Diversified[T]]:
    """All `items`, each picked in turn as the one whose `relevance × factor` is highest,
    `factor = lam + (1 − lam)·(1 − max overlap with those picked)`; ties go to the earlier.

    The adjusted scores never rise down the list: an item's overlap with the picked set only
    grows as items are picked, so every value left only falls, and each pick is the highest
    left. Nothing is dropped. Cost: O(k²) Jaccard computations for k items (each item keeps
    its running highest overlap).
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be within [0, 1], got {lam!r}")
    count = len(items)
    if count <= 1:
        return [Diversified(item, 1.0) for item in items]
    # Negative or NaN relevance carries no evidence of relevance: treat it as 0.
    rel = [r if (r := relevance(item)) > 0.0 else 0.0 for item in items]
    token_sets = [tokens(item) for item in items]
    max_sim = [0.0] * count
    novelty_weight = 1.0 - lam

    remaining = list(range(count))
    order: list[Diversified[T]] = []
    while remaining:
        pick_pos = 0
        best_value = float("-inf")
        for pos, i in enumerate(remaining):
            value = rel[i] * (1.0 - novelty_weight * max_sim[i])
            if value > best_value:
                best_value, pick_pos = value, pos
        picked = remaining.pop(pick_pos)
        order.append(Diversified(items[picked], 1.0 - novelty_weight * max_sim[picked]))
        picked_tokens = token_sets[picked]
        for i in remaining:
            sim = jaccard(picked_tokens, token_sets[i])
            if sim > max_sim[i]:
                max_sim[i] = sim
    return order
