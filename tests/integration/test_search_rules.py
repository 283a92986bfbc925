"""The session's search rules, as every face gets them: at most `per_note` passages of one
note, with other notes filling the places of those dropped (and, when none is dropped, the
very answer of a search without the limit); dates read from the query's words and widened
when they hold nothing; `since` after `until` refused."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from apus.config import Settings
from apus.errors import SearchInputError
from apus.index.note_filter import NoteFilter
from apus.memory import Memory
from apus.search.options import SearchOptions
from support.vaults import make_settings, write_note
from support.vaults import sync as sync_index

FILLER = "\n\nmore words about the kitchen shelf\nand the window sill"
SECTIONS = ["V60", "Kettle", "Moka", "Grinder", "Cold brew", "Beans"]


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("APUS_TODAY", "2026-12-02")
    vault = tmp_path / "vault"
    # One note of many coffee passages apart from each other, and others with one each.
    body = "\n\n".join(
        f"## {name}\n\nCoffee coffee coffee: the {name} way.{FILLER}" for name in SECTIONS
    )
    write_note(vault, "notes/brewing.md", f"# Brewing\n\n{body}\n")
    for number in range(8):
        write_note(
            vault,
            f"notes/cafe-{number}.md",
            f"# Cafe {number}\n\nA place with tables, cake, tea and coffee on the corner.\n",
        )
    write_note(vault, "daily/2026-11-20.md", "# 20 November\n\nCoffee with Sam.\n")
    settings = make_settings(
        vault,
        memory__search__chunking__tokens=40,
        memory__search__chunking__overlap=0,
        memory__search__query__hybrid__temporalDecay__enabled=False,
    )
    sync_index(settings)
    return settings


def _found(memory: Memory, query: str, **options: object) -> list[tuple[str, int, int]]:
    hits = memory.search(query, SearchOptions(**options)).hits  # type: ignore[arg-type]
    return [(hit.path, hit.start_line, hit.end_line) for hit in hits]


def test_a_per_note_limit_fills_the_places_of_what_it_drops(settings: Settings) -> None:
    with Memory(settings=settings) as memory:
        plain = _found(memory, "coffee", limit=8)
        assert sum(path == "notes/brewing.md" for path, *_ in plain) >= 3
        kept = _found(memory, "coffee", limit=8, per_note=1)
        assert len(kept) == 8  # other notes took the places, not fewer passages
        assert [path for path, *_ in kept].count("notes/brewing.md") == 1
        assert len({path for path, *_ in kept}) == 8
        # The note's touching passages became one, over all their lines.
        [(_, first, last)] = [hit for hit in kept if hit[0] == "notes/brewing.md"]
        assert last - first > 20
        # A limit that drops nothing changes nothing: the answer of a search without it.
        assert _found(memory, "cake", limit=5, per_note=2) == _found(memory, "cake", limit=5)


def test_dates_read_from_the_query_and_widened_when_they_hold_nothing(
    settings: Settings,
) -> None:
    with Memory(settings=settings) as memory:
        dated = memory.search("coffee last month", SearchOptions(time_words=True))
        assert [hit.path for hit in dated.hits] == ["daily/2026-11-20.md"]
        assert dated.time_window is not None and not dated.widened
        assert dated.time_window.since == dt.date(2026, 11, 1)
        empty = memory.search("coffee in May", SearchOptions(time_words=True))
        assert empty.widened and empty.hits and empty.time_window is not None
        literal = memory.search("coffee last month", SearchOptions())
        assert literal.time_window is None and not literal.widened


def test_since_after_until_is_refused(settings: Settings) -> None:
    later, earlier = dt.date(2026, 11, 30), dt.date(2026, 11, 1)
    with Memory(settings=settings) as memory, pytest.raises(SearchInputError) as refused:
        memory.search("coffee", SearchOptions(filters=NoteFilter(since=later, until=earlier)))
    assert refused.value.fix == "swap them, or leave one out"
