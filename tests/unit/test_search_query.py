"""A query read once (ParsedQuery) and options resolved once (SearchOptions.resolve)."""

from __future__ import annotations

import datetime as dt
import unicodedata

import pytest

from apus.config import HybridSettings, MmrSettings, QuerySettings, TemporalDecaySettings
from apus.index.note_filter import NoteFilter
from apus.search.options import SearchOptions
from apus.search.query import ParsedQuery
from apus.search.ranking import PathTier

# A Sunday: "last week" is the Monday to Sunday before it.
TODAY = dt.date(2025, 6, 15)


def test_the_words_are_trimmed_and_folded_into_distinct_terms() -> None:
    parsed = ParsedQuery.parse("  Café CRÈME and the café notes ")
    assert parsed.text == "Café CRÈME and the café notes"
    assert parsed.terms == ("cafe", "creme", "notes")  # function words dropped, each once
    assert ParsedQuery.parse("the").terms == ("the",)  # unless nothing else is left
    assert ParsedQuery.parse(unicodedata.normalize("NFD", "crème")).terms == ("creme",)


@pytest.mark.parametrize(
    ("query", "lookup"),
    [("JIRA-4821", True), (" k3s ", True), ("home router", False), ("where is JIRA-4821", False)],
)
def test_an_identifier_lookup_is_read_from_the_words(query: str, lookup: bool) -> None:
    assert ParsedQuery.parse(query).identifier_lookup is lookup


def test_the_path_form_is_folded_forward_slashed_and_tiers_paths() -> None:
    path = ParsedQuery.parse(" ./Projects\\Homelab.md ").path
    assert path.form == "projects/homelab.md"
    assert path.has_separator
    assert path.tier("projects/homelab.md") is PathTier.EXACT
    assert ParsedQuery.parse("HOMELAB").path.tier("projects/homelab.md") is PathTier.STEM
    assert ParsedQuery.parse("projects").path.tier("projects/homelab.md") is PathTier.PARTIAL
    assert ParsedQuery.parse("").path.tier("projects/homelab.md") is PathTier.NONE


def test_a_time_expression_becomes_a_window_and_leaves_the_words() -> None:
    parsed = ParsedQuery.dated("router notes last week", today=TODAY)
    assert parsed.window is not None
    assert (parsed.window.since, parsed.window.until) == (dt.date(2025, 6, 2), dt.date(2025, 6, 8))
    assert parsed.window.text == "last week"
    assert parsed.text == "router notes"
    assert parsed.terms == ("router", "notes")
    assert parsed.path.form == "router notes"


def test_a_window_is_read_only_when_asked_for_and_only_when_the_query_names_one() -> None:
    assert ParsedQuery.parse("router notes last week").window is None
    assert ParsedQuery.parse("router notes last week").terms == ("router", "notes", "last", "week")
    assert ParsedQuery.dated("router notes", today=TODAY) == ParsedQuery.parse("router notes")


def _config(max_results: int = 10, min_score: float = 0.35, candidates: int = 200) -> QuerySettings:
    hybrid = HybridSettings(
        vector_weight=0.6,
        merge="rrf",
        rrf_k=20,
        mmr=MmrSettings(enabled=False, lambda_=0.4),
        temporal_decay=TemporalDecaySettings(enabled=False, half_life_days=7.0, floor=0.5),
    )
    return QuerySettings(
        max_results=max_results, min_score=min_score, candidates=candidates, hybrid=hybrid
    )


def test_options_left_open_take_the_settings_and_every_setting_is_read_at_once() -> None:
    config = _config(max_results=7, min_score=0.2, candidates=40)
    resolved = SearchOptions().resolve(config)
    assert (resolved.limit, resolved.min_score, resolved.mmr, resolved.recency) == (
        7,
        0.2,
        False,
        False,
    )
    assert resolved.candidates == 40
    assert resolved.hybrid is True
    assert (resolved.vector_weight, resolved.text_weight) == (0.6, None)
    assert (resolved.merge, resolved.rrf_k, resolved.mmr_lambda) == ("rrf", 20, 0.4)
    assert (resolved.half_life_days, resolved.recency_floor) == (7.0, 0.5)


def test_options_given_are_kept_whatever_the_settings_say() -> None:
    filters = NoteFilter(path_prefixes=("daily/",))
    asked = SearchOptions(
        mode="keyword", limit=3, mmr=True, recency=True, min_score=0.0, filters=filters
    )
    for config in (_config(), _config(max_results=50, min_score=0.9)):
        resolved = asked.resolve(config)
        assert (resolved.mode, resolved.limit, resolved.min_score) == ("keyword", 3, 0.0)
        assert (resolved.mmr, resolved.recency) == (True, True)
        assert resolved.filters is filters
