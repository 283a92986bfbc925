"""A long-lived searcher's path-word table across edits: brought up to date from the last
one, it tiers a moved, added or deleted note as a table built anew would."""

from __future__ import annotations

from pathlib import Path

from apus.search.engine import Searcher, SearchOptions
from support.vaults import make_settings, sync, write_note

KEYWORD = SearchOptions(mode="keyword")


def _top(searcher: Searcher, query: str) -> list[str]:
    return [hit.path for hit in searcher.search(query, KEYWORD).hits]


def test_moves_adds_and_deletes_reach_the_table_of_the_next_generation(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for number in range(30):
        write_note(vault, f"archive/page-{number}.md", f"# Page {number}\n\nfiller words\n")
    write_note(vault, "projects/kayak-trip.md", "# Trip\n\nPaddled on Sunday.\n")
    settings = make_settings(vault)
    sync(settings)
    searcher = Searcher(settings)
    try:
        for _ in range(3):  # the first search tiers one by one, the second builds the table
            assert _top(searcher, "kayak-trip")[:1] == ["projects/kayak-trip.md"]
        (vault / "projects/kayak-trip.md").rename(vault / "projects/canoe-trip.md")
        write_note(vault, "notes/kayak-gear.md", "# Gear\n\nA spray deck.\n")
        (vault / "archive/page-3.md").unlink()
        sync(settings)
        for _ in range(3):  # the table of this generation is the last one, updated
            assert _top(searcher, "canoe-trip")[:1] == ["projects/canoe-trip.md"]
            assert _top(searcher, "kayak-gear")[:1] == ["notes/kayak-gear.md"]
            assert "projects/kayak-trip.md" not in _top(searcher, "kayak-trip")
            assert "archive/page-3.md" not in _top(searcher, "page-3")
    finally:
        searcher.close()
