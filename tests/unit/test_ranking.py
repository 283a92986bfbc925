"""Recency decay, importance multiplier, path tiers and the minScore selection rules."""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from datetime import date, timedelta

import pytest

from apus.search.ranking import (
    PathTier,
    QueryPath,
    RankFactors,
    final_score,
    importance_factor,
    rank_key,
    readable_score,
    recency_factor,
    recency_weight,
    select_with_min_score,
)

TODAY = date(2025, 3, 1)


def path_tier(query: str, rel_path: str) -> PathTier:
    """How `query` names `rel_path`, as the Searcher reads a query once and asks per note."""
    return QueryPath.of(query).tier(rel_path)


@pytest.mark.parametrize(
    ("age_days", "expected"),
    [(0, 1.0), (30, 0.5), (60, 0.25), (90, 0.125), (15, 2**-0.5)],
)
def test_recency_halves_every_thirty_days(age_days: int, expected: float) -> None:
    note_date = TODAY - timedelta(days=age_days)
    assert recency_factor(note_date, TODAY) == pytest.approx(expected)


def test_recency_custom_half_life() -> None:
    assert recency_factor(TODAY - timedelta(days=30), TODAY, half_life_days=10) == pytest.approx(
        0.125
    )


def test_recency_evergreen_disabled_and_future() -> None:
    old = TODAY - timedelta(days=365)
    assert recency_factor(None, TODAY) == 1.0
    assert recency_factor(old, TODAY, enabled=False) == 1.0
    assert recency_factor(TODAY + timedelta(days=10), TODAY) == 1.0


@pytest.mark.parametrize("half_life", [0.0, -30.0, math.nan])
def test_recency_rejects_non_positive_half_life(half_life: float) -> None:
    with pytest.raises(ValueError, match="half_life_days"):
        recency_factor(TODAY, TODAY, half_life_days=half_life)


@pytest.mark.parametrize(
    ("importance", "expected"),
    [
        (1, 0.8),
        (5, 1.0),
        (10, 1.25),
        (7.5, 1.125),
        (None, 1.0),
        (0, 1.0),
        (11, 1.0),
        (-3, 1.0),
        (math.nan, 1.0),
        (True, 1.0),
        ("7", 1.0),
    ],
)
def test_importance_factor(importance: object, expected: float) -> None:
    assert importance_factor(importance) == pytest.approx(expected)  # type: ignore[arg-type]


def test_path_tiers_are_ordered() -> None:
    assert PathTier.EXACT > PathTier.BASENAME > PathTier.STEM > PathTier.PARTIAL > PathTier.NONE


REL = "memory/2025-01-03.md"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("memory/2025-01-03.md", PathTier.EXACT),
        ("./memory/2025-01-03.md", PathTier.EXACT),
        ("memory\\2025-01-03.md", PathTier.EXACT),
        ("  MEMORY/2025-01-03.MD ", PathTier.EXACT),
        ("2025-01-03.md", PathTier.BASENAME),
        ("2025-01-03", PathTier.STEM),
        ("2025-01", PathTier.PARTIAL),
        ("memory/2025", PathTier.PARTIAL),
        ("01-03 Memory", PathTier.PARTIAL),  # every word is somewhere in the path
        ("01-03 journal", PathTier.NONE),
        ("m", PathTier.NONE),  # too short to mean a path
        ("2024", PathTier.NONE),
        ("", PathTier.NONE),
        ("   ", PathTier.NONE),
    ],
)
def test_path_tier(query: str, expected: PathTier) -> None:
    assert path_tier(query, REL) is expected


def test_root_file_matches_exact_before_basename() -> None:
    assert path_tier("memory.md", "MEMORY.md") is PathTier.EXACT
    assert path_tier("memory", "MEMORY.md") is PathTier.STEM


def test_path_tier_ignores_unicode_normalisation_case_and_accents() -> None:
    nfc_path = unicodedata.normalize("NFC", "notes/Café Crème.md")
    nfd_path = unicodedata.normalize("NFD", nfc_path)
    nfd_query = unicodedata.normalize("NFD", "café crème.md")
    assert nfd_query != "café crème.md"  # the test really compares two spellings

    assert path_tier(nfd_query, nfc_path) is PathTier.BASENAME
    assert path_tier("café crème.md", nfd_path) is PathTier.BASENAME
    assert path_tier(unicodedata.normalize("NFD", "NOTES/CAFÉ CRÈME.MD"), nfc_path) is (
        PathTier.EXACT
    )
    assert path_tier("cafe creme", nfc_path) is PathTier.STEM
    assert path_tier("CREME", nfd_path) is PathTier.PARTIAL
    assert path_tier("STRASSE", "Straße.md") is PathTier.STEM


def test_final_score_multiplies_factors() -> None:
    factors = RankFactors(recency=0.5, importance=1.25, tier=PathTier.NONE, recency_weight=0.6)
    assert final_score(0.8, factors) == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("decay", "floor", "expected"),
    [
        (1.0, 0.8, 1.0),  # today's note counts fully
        (0.5, 0.8, 0.9),  # a month old
        (0.0, 0.8, 0.8),  # however old, never below the floor
        (0.25, 0.0, 0.25),  # floor 0: the decay itself
        (0.0, 1.0, 1.0),  # floor 1: no recency at all
        (0.5, 1.7, 1.0),  # out of range: clamped
    ],
)
def test_recency_weight_blends_the_decay_above_a_floor(
    decay: float, floor: float, expected: float
) -> None:
    assert recency_weight(decay, floor) == pytest.approx(expected)


def test_readable_scores_keep_small_values_apart() -> None:
    assert readable_score(3.9e-12) == pytest.approx(3.9e-12)
    assert readable_score(3.9e-12) != readable_score(3.8e-12)
    assert readable_score(0.123456789) == 0.123457
    assert readable_score(0.0) == 0.0


def test_rank_key_puts_tiers_ahead_of_score() -> None:
    candidates = [
        (0.9, PathTier.NONE),
        (0.2, PathTier.STEM),
        (0.5, PathTier.NONE),
        (0.1, PathTier.EXACT),
        (0.3, PathTier.STEM),
        (0.05, PathTier.PARTIAL),
    ]
    ranked = sorted(candidates, key=lambda c: rank_key(*c))
    assert ranked == [
        (0.1, PathTier.EXACT),
        (0.3, PathTier.STEM),
        (0.2, PathTier.STEM),
        (0.05, PathTier.PARTIAL),
        (0.9, PathTier.NONE),
        (0.5, PathTier.NONE),
    ]


@dataclass(frozen=True)
class Hit:
    name: str
    score: float
    keyword: bool


def _select(items: list[Hit], min_score: float, limit: int) -> list[str]:
    chosen = select_with_min_score(
        items,
        score=lambda h: h.score,
        is_keyword_match=lambda h: h.keyword,
        min_score=min_score,
        limit=limit,
    )
    return [h.name for h in chosen]


MIXED = [
    Hit("a", 0.9, keyword=True),
    Hit("b", 0.8, keyword=False),
    Hit("c", 0.5, keyword=True),
    Hit("d", 0.2, keyword=False),
    Hit("e", 0.1, keyword=True),
]


def test_select_takes_passing_items_up_to_limit() -> None:
    assert _select(MIXED, min_score=0.35, limit=2) == ["a", "b"]
    assert _select(MIXED, min_score=0.5, limit=3) == ["a", "b", "c"]  # 0.5 >= 0.5 passes


def test_select_fills_remaining_slots_with_keyword_matches_only() -> None:
    # a, b, c pass; e is a keyword match below the threshold; d is semantic-only below it.
    assert _select(MIXED, min_score=0.35, limit=4) == ["a", "b", "c", "e"]
    assert _select(MIXED, min_score=0.35, limit=10) == ["a", "b", "c", "e"]


def test_select_keeps_keyword_matches_when_nothing_passes() -> None:
    items = [
        Hit("p", 0.3, keyword=False),
        Hit("q", 0.2, keyword=True),
        Hit("r", 0.1, keyword=True),
        Hit("s", 0.05, keyword=True),
    ]
    assert _select(items, min_score=0.5, limit=2) == ["q", "r"]
    assert _select(items, min_score=0.5, limit=10) == ["q", "r", "s"]


def test_select_keeps_input_order() -> None:
    # A path-tier hit ranks first with a low score; filling it in must not move it down.
    items = [Hit("path", 0.1, keyword=True), Hit("body", 0.9, keyword=False)]
    assert _select(items, min_score=0.35, limit=2) == ["path", "body"]


def test_select_with_no_room_or_nothing_eligible() -> None:
    assert _select(MIXED, min_score=0.35, limit=0) == []
    assert _select([Hit("x", 0.1, keyword=False)], min_score=0.35, limit=5) == []
    assert _select([], min_score=0.35, limit=5) == []


def test_partial_tier_needs_whole_path_words() -> None:
    path = "projects/home-network.md"
    assert path_tier("network", path) == PathTier.PARTIAL
    assert path_tier("projects/home", path) == PathTier.PARTIAL
    assert path_tier("home network", path) == PathTier.PARTIAL
    # Letters inside a word, or the extension, name nothing.
    assert path_tier("or", path) == PathTier.NONE
    assert path_tier("md", path) == PathTier.NONE
    assert path_tier("netw", path) == PathTier.NONE
