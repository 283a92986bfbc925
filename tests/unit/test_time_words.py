"""Dates in an agent's words, counted from a fixed today (a Wednesday)."""

from __future__ import annotations

import datetime as dt

import pytest

from apus.search.time_words import TimeWordsError, bound, window_in_query

TODAY = dt.date(2026, 12, 2)
D = dt.date


@pytest.mark.parametrize(
    ("text", "since", "until"),
    [
        ("2026-11-20", D(2026, 11, 20), D(2026, 11, 20)),
        ("2026-11-20T23:10:00Z", D(2026, 11, 20), D(2026, 11, 20)),
        ("2026-11-20T10:00:00+02:00", D(2026, 11, 20), D(2026, 11, 20)),
        ("7d", D(2026, 11, 25), D(2026, 11, 25)),
        ("2w", D(2026, 11, 18), D(2026, 11, 18)),
        ("3m", D(2026, 9, 2), D(2026, 9, 2)),
        ("1y", D(2025, 12, 2), D(2025, 12, 2)),
        ("yesterday", D(2026, 12, 1), D(2026, 12, 1)),
        ("today", TODAY, TODAY),
        ("last week", D(2026, 11, 23), D(2026, 11, 29)),
        ("last month", D(2026, 11, 1), D(2026, 11, 30)),
        ("3 days ago", D(2026, 11, 29), D(2026, 11, 29)),
        ("last friday", D(2026, 11, 27), D(2026, 11, 27)),
        ("May 2026", D(2026, 5, 1), D(2026, 5, 31)),
    ],
)
def test_since_and_until_values(text: str, since: dt.date, until: dt.date) -> None:
    assert bound(text, today=TODAY, end=False) == since
    assert bound(text, today=TODAY, end=True) == until


@pytest.mark.parametrize("text", ["soonish", "", "   ", "the blue one"])
def test_words_that_name_no_date_are_refused(text: str) -> None:
    with pytest.raises(TimeWordsError):
        bound(text, today=TODAY, end=False)


@pytest.mark.parametrize(
    ("query", "since", "until", "said", "rest"),
    [
        (
            "what did I decide last week about the VPN",
            D(2026, 11, 23),
            D(2026, 11, 29),
            "last week",
            "what did I decide about the VPN",
        ),
        ("what happened in May", D(2026, 5, 1), D(2026, 5, 31), "May", "what happened"),
        (
            "notes on 2026-11-20 about Sam",
            D(2026, 11, 20),
            D(2026, 11, 20),
            "2026-11-20",
            "notes about Sam",
        ),
        ("what did I do yesterday", D(2026, 12, 1), D(2026, 12, 1), "yesterday", "what did I do"),
        (
            "meeting notes from last month",
            D(2026, 11, 1),
            D(2026, 11, 30),
            "last month",
            "meeting notes",
        ),
        (
            "what did we ship in the last 7 days",
            D(2026, 11, 25),
            TODAY,
            "last 7 days",
            "what did we ship",
        ),
        (
            "what did I decide on Monday",
            D(2026, 11, 30),
            D(2026, 11, 30),
            "Monday",
            "what did I decide",
        ),
    ],
)
def test_a_time_in_the_query_is_a_window(
    query: str, since: dt.date, until: dt.date, said: str, rest: str
) -> None:
    found = window_in_query(query, today=TODAY)
    assert found is not None
    window, words = found
    assert (window.since, window.until, window.text, words) == (since, until, said, rest)


@pytest.mark.parametrize(
    "query",
    [
        "May I ask about the router",
        "set the timer to 10 seconds",
        "now what",
        "we met the team",
        "release 2.1 notes",
        "version 2025 roadmap",
        "JIRA-4821 fix",
        "deploy the blog",
    ],
)
def test_words_that_only_look_like_dates_are_not_windows(query: str) -> None:
    assert window_in_query(query, today=TODAY) is None
