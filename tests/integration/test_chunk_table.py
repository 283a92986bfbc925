"""A searcher weighs a generation's first search's candidates from the store and its later
searches' from the generation's chunk table: both give the same answers, dates, importances
and annotations included, and a chunk gone from the store since is not shown."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from apus.index.store import Store
from apus.search.engine import Searcher, SearchHit
from apus.search.options import SearchOptions
from support.vaults import make_settings, sync, write_note

TODAY = dt.date(2026, 3, 14)
KEYWORD = SearchOptions(mode="keyword")
QUERIES = ("heron", "heron marsh", "2026-03-10", "ledger", "marsh")


def _vault(root: Path) -> Path:
    vault = root / "vault"
    for days in (0, 4, 40, 400):
        day = TODAY - dt.timedelta(days=days)
        text = f"# {day}\n\nA heron stood in the marsh, day {days}.\n"
        write_note(vault, f"daily/{day}.md", text)
    write_note(vault, "big.md", "---\nimportance: 9\n---\n# Big\n\nThe heron ledger.\n")
    write_note(vault, "small.md", "---\nimportance: 2\n---\n# Small\n\nA heron, once.\n")
    write_note(
        vault,
        "log.md",
        "# Log\n\n## Plain\n\nThe marsh was quiet.\n\n"
        "## Marked\n\n<!-- importance: 10 -->\nA heron nest in the marsh reeds.\n",
    )
    for number in range(20):
        write_note(vault, f"other/page-{number}.md", f"# Page {number}\n\nmarsh filler {number}\n")
    return vault


def _answer(hits: list[SearchHit]) -> list[tuple[object, ...]]:
    return [(h.chunk_id, h.path, h.score, h.snippet, h.highlights, h.legs, h.explain) for h in hits]


def test_first_and_later_searches_weigh_alike(tmp_path: Path) -> None:
    settings = make_settings(_vault(tmp_path))
    sync(settings)
    searcher = Searcher(settings, today=lambda: TODAY)
    try:
        rounds = []
        for _ in range(3):  # the first reads the store, the second builds the table
            rounds.append({q: _answer(searcher.search(q, KEYWORD).hits) for q in QUERIES})
        latest = searcher._generations.latest
        assert latest is not None and latest.built
        searcher_hits = searcher.search("heron", KEYWORD).hits
    finally:
        searcher.close()
    assert rounds[0] == rounds[1] == rounds[2]
    by_path = {hit.path: hit.explain for hit in searcher_hits}
    assert by_path["big.md"].importance == 0.75 + 0.05 * 9
    assert by_path["small.md"].importance == 0.75 + 0.05 * 2
    assert by_path["log.md"].importance == 0.75 + 0.05 * 10  # the annotation's
    assert by_path[f"daily/{TODAY}.md"].recency == 1.0
    assert by_path[f"daily/{TODAY - dt.timedelta(days=40)}.md"].recency < 1.0


def test_a_chunk_gone_from_the_store_gives_its_place_to_the_next(tmp_path: Path) -> None:
    settings = make_settings(_vault(tmp_path))
    sync(settings)
    three = SearchOptions(mode="keyword", limit=3, mmr=False)
    searcher = Searcher(settings, today=lambda: TODAY)
    try:
        for _ in range(2):
            before = [hit.path for hit in searcher.search("heron", three).hits]
        gone = before[0]
        # Out of the store behind the keyword index's back: the leg still finds it.
        store = Store(settings.index_dir())
        try:
            with store.transaction():
                record = store.file_by_path(gone)
                assert record is not None
                store.delete_files([record.id])
        finally:
            store.close()
        after = [hit.path for hit in searcher.search("heron", three).hits]
        # The table built before the deletion answered: the gone chunk was met there.
        latest = searcher._generations.latest
        assert latest is not None and latest.built
    finally:
        searcher.close()
    fresh = Searcher(settings, today=lambda: TODAY)  # weighs from the store
    try:
        expected = [hit.path for hit in fresh.search("heron", three).hits]
    finally:
        fresh.close()
    assert after == expected == [*before[1:], expected[-1]]
    assert gone not in after and len(after) == 3
