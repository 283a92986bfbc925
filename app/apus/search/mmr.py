"""Maximal marginal relevance: re-order results so near-duplicate snippets do not crowd the top."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

# Relevance-biased setting from the product description: diversity only breaks near-ties.
DEFAULT_LAMBDA = 0.7


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; two empty sets share nothing, so 0.0."""
    if not a and not b:
        return 0.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)


def mmr_order(
    items: Sequence[T],
    *,
    relevance: Callable[[T], float],
    tokens: Callable[[T], frozenset[str]],
    lam: float = DEFAULT_LAMBDA,
) -> list[T]:
    """Return all `items` re-ordered by MMR; nothing is dropped and no score is changed.

    Each step picks the remaining item maximising `lam·rel - (1 - lam)·max_sim`, where
    `max_sim` is its highest Jaccard overlap with an already picked item; ties go to the
    earlier item. Relevance is divided by the best relevance in the set first, so it lies in
    [0, 1] like Jaccard and `lam` means the same trade-off whatever the score scale (raw BM25,
    cosine or a decayed hybrid score).

    Cost is O(k²) Jaccard computations for k items: every pair is compared at most once, by
    keeping each remaining item's running maximum similarity to the picked set.
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be within [0, 1], got {lam!r}")
    count = len(items)
    if count <= 1:
        return list(items)

    # Negative or NaN relevance carries no evidence of relevance: treat it as 0.
    raw = [r if (r := relevance(item)) > 0.0 else 0.0 for item in items]
    best = max(raw)
    rel = [r / best for r in raw] if best > 0.0 else [0.0] * count
    token_sets = [tokens(item) for item in items]
    max_sim = [0.0] * count
    diversity_weight = 1.0 - lam

    remaining = list(range(count))
    order: list[int] = []
    while remaining:
        pick_pos = 0
        best_value = float("-inf")
        for pos, i in enumerate(remaining):
            value = lam * rel[i] - diversity_weight * max_sim[i]
            if value > best_value:
                best_value, pick_pos = value, pos
        picked = remaining.pop(pick_pos)
        order.append(picked)

        picked_tokens = token_sets[picked]
        for i in remaining:
            sim = jaccard(picked_tokens, token_sets[i])
            if sim > max_sim[i]:
                max_sim[i] = sim
    return [items[i] for i in order]
