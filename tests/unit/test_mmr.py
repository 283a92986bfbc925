"""Jaccard overlap and MMR: the order, and the scores it is made by."""

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


def _placed(items: list[Snip], lam: float = 0.7) -> list[tuple[str, float]]:
    placed = mmr_order(items, relevance=lambda s: s.score, tokens=lambda s: s.words, lam=lam)
    return [(d.item.name, d.item.score * d.factor) for d in placed]


def _order(items: list[Snip], lam: float = 0.7) -> list[str]:
    return [name for name, _ in _placed(items, lam)]


ROUTER = frozenset({"router", "config", "port", "8080"})
BACKUP = frozenset({"backup", "schedule", "nightly"})
NEAR_DUPLICATES = [
    Snip("router", 1.0, ROUTER),
    Snip("router-copy", 0.95, ROUTER),
    Snip("backup", 0.9, BACKUP),
]


def test_near_duplicate_moves_below_distinct_note() -> None:
    # After "router": copy = 0.95·(0.7 + 0.3·0) = 0.665; backup = 0.9·1 = 0.9.
    assert _placed(NEAR_DUPLICATES) == [
        ("router", 1.0),
        ("backup", 0.9),
        ("router-copy", pytest.approx(0.665)),
    ]


def test_mmr_keeps_every_item_and_says_what_it_multiplied() -> None:
    placed = mmr_order(
        NEAR_DUPLICATES, relevance=lambda s: s.score, tokens=lambda s: s.words, lam=0.7
    )
    assert sorted(d.item.name for d in placed) == sorted(s.name for s in NEAR_DUPLICATES)
    assert {d.item.name: d.factor for d in placed} == {
        "router": 1.0,
        "backup": 1.0,
        "router-copy": pytest.approx(0.7),
    }


def test_lambda_one_keeps_relevance_order() -> None:
    assert _placed(NEAR_DUPLICATES, lam=1.0) == [
        ("router", 1.0),
        ("router-copy", 0.95),
        ("backup", 0.9),
    ]


def test_lambda_sets_the_trade_off() -> None:
    items = [
        Snip("a", 1.0, frozenset("abcd")),
        Snip("b", 0.8, frozenset("abce")),  # Jaccard with a: 3/5 = 0.6
        Snip("c", 0.6, frozenset("xy")),
    ]
    # λ=0.7 after a: b = 0.8·(1 - 0.3·0.6) = 0.656 > c = 0.6.
    assert _order(items, lam=0.7) == ["a", "b", "c"]
    # λ=0.3 after a: b = 0.8·(1 - 0.7·0.6) = 0.464 < c = 0.6.
    assert _order(items, lam=0.3) == ["a", "c", "b"]


def test_relevance_scale_does_not_change_the_order() -> None:
    scaled = [Snip(s.name, s.score * 100, s.words) for s in NEAR_DUPLICATES]
    assert _order(scaled) == ["router", "backup", "router-copy"]


def test_ties_keep_original_order() -> None:
    items = [Snip(name, 0.5, frozenset({name})) for name in "qwerty"]
    assert _order(items) == list("qwerty")


def test_lambda_zero_orders_by_novelty_times_relevance() -> None:
    items = [
        Snip("a", 0.9, frozenset("ab")),
        Snip("b", 0.8, frozenset("ab")),
        Snip("c", 0.5, frozenset("cd")),
    ]
    # After a, b repeats it wholly: 0.8·0 = 0 below c's 0.5.
    assert _placed(items, lam=0.0) == [("a", 0.9), ("c", 0.5), ("b", 0.0)]


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
    placed = _placed(items)
    assert sorted(name for name, _ in placed) == sorted(s.name for s in items)
    assert placed[0][0] == max(items, key=lambda s: s.score).name
    scores = [score for _, score in placed]
    assert scores == sorted(scores, reverse=True)  # what it is ordered by never rises
