"""Jaccard overlap and MMR re-ordering."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from apus.search.mmr import jaccard, mmr_order


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (set(), set(), 0.0),
        ({"x"}, set(), 0.0),
        ({"x", "y"}, {"y", "x"}, 1.0),
        ({"a", "b", "c"}, {"b", "c", "d"}, 0.5),
        ({"a", "b"}, {"c"}, 0.0),
        ({"a"}, {"a", "b", "c", "d"}, 0.25),
    ],
)
def test_jaccard(a: set[str], b: set[str], expected: float) -> None:
    assert jaccard(frozenset(a), frozenset(b)) == pytest.approx(expected)


@dataclass(frozen=True)
class Snip:
    name: str
    score: float
    words: frozenset[str]


def _order(items: list[Snip], lam: float = 0.7) -> list[str]:
    ordered = mmr_order(items, relevance=lambda s: s.score, tokens=lambda s: s.words, lam=lam)
    return [s.name for s in ordered]


ROUTER = frozenset({"router", "config", "port", "8080"})
BACKUP = frozenset({"backup", "schedule", "nightly"})
NEAR_DUPLICATES = [
    Snip("router", 1.0, ROUTER),
    Snip("router-copy", 0.95, ROUTER),
    Snip("backup", 0.9, BACKUP),
]


def test_near_duplicate_moves_below_distinct_note() -> None:
    # After "router": copy = 0.7·0.95 - 0.3·1.0 = 0.365; backup = 0.7·0.9 - 0 = 0.63.
    assert _order(NEAR_DUPLICATES) == ["router", "backup", "router-copy"]


def test_mmr_keeps_every_item_and_its_score() -> None:
    ordered = mmr_order(
        NEAR_DUPLICATES, relevance=lambda s: s.score, tokens=lambda s: s.words, lam=0.7
    )
    assert sorted(ordered, key=lambda s: s.name) == sorted(NEAR_DUPLICATES, key=lambda s: s.name)
    assert {s.name: s.score for s in ordered} == {"router": 1.0, "router-copy": 0.95, "backup": 0.9}


def test_lambda_one_keeps_relevance_order() -> None:
    assert _order(NEAR_DUPLICATES, lam=1.0) == ["router", "router-copy", "backup"]


def test_lambda_sets_the_trade_off() -> None:
    items = [
        Snip("a", 1.0, frozenset("abcd")),
        Snip("b", 0.8, frozenset("abce")),  # Jaccard with a: 3/5 = 0.6
        Snip("c", 0.6, frozenset("xy")),
    ]
    # λ=0.7 after a: b = 0.56 - 0.18 = 0.38 < c = 0.42.
    assert _order(items, lam=0.7) == ["a", "c", "b"]
    # λ=0.9 after a: b = 0.72 - 0.06 = 0.66 > c = 0.54.
    assert _order(items, lam=0.9) == ["a", "b", "c"]


def test_relevance_scale_does_not_change_the_order() -> None:
    # Raw BM25-sized scores: without normalising by the best, 0.7·95 would swamp any overlap.
    scaled = [Snip(s.name, s.score * 100, s.words) for s in NEAR_DUPLICATES]
    assert _order(scaled) == ["router", "backup", "router-copy"]


def test_ties_keep_original_order() -> None:
    items = [Snip(name, 0.5, frozenset({name})) for name in "qwerty"]
    assert _order(items) == list("qwerty")


def test_lambda_zero_orders_by_diversity_alone() -> None:
    items = [
        Snip("a", 0.1, frozenset("ab")),
        Snip("b", 0.9, frozenset("ab")),
        Snip("c", 0.5, frozenset("cd")),
    ]
    # First pick is a tie at 0 (original order); then c shares nothing with a, b everything.
    assert _order(items, lam=0.0) == ["a", "c", "b"]


def test_small_inputs() -> None:
    assert _order([]) == []
    only = Snip("only", 0.0, frozenset())
    assert _order([only]) == ["only"]
    zeros = [Snip("x", 0.0, frozenset()), Snip("y", 0.0, frozenset())]
    assert _order(zeros) == ["x", "y"]


@pytest.mark.parametrize("lam", [-0.1, 1.5, float("nan")])
def test_lambda_outside_unit_interval_is_rejected(lam: float) -> None:
    with pytest.raises(ValueError, match="lam"):
        _order(NEAR_DUPLICATES, lam=lam)


def test_full_candidate_set_is_a_permutation() -> None:
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(60)]
    items = [
        Snip(f"n{i}", rng.random() * 20, frozenset(rng.sample(vocabulary, 12))) for i in range(400)
    ]
    ordered = _order(items)
    assert sorted(ordered) == sorted(s.name for s in items)
    assert ordered[0] == max(items, key=lambda s: s.score).name
