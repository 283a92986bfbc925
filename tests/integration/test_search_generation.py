"""What a Searcher keeps between queries (what the filters admit, which sources the store
holds, the names table) follows the store's generation: a sync that commits between two
searches of one Searcher is seen by the second."""

from __future__ import annotations

from pathlib import Path

from apus.index.store import Store
from apus.search.engine import Searcher, SearchOptions
from support.vaults import make_settings, sync, write_note


def test_a_searcher_sees_files_committed_between_two_of_its_searches(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "garden.md", "# Garden\n\nThe tomato beds need water every morning.\n")
    settings = make_settings(vault)
    sync(settings)
    searcher = Searcher(settings)
    try:
        options = SearchOptions(mode="keyword")
        first = searcher.search("tomato", options)
        assert [h.path for h in first.hits] == ["garden.md"]
        assert searcher.search("greenhouse", options).hits == []
        before = _generation(settings.index_dir())

        write_note(vault, "greenhouse.md", "# Greenhouse\n\nThe tomato seedlings start here.\n")
        sync(settings)
        assert _generation(settings.index_dir()) != before

        second = searcher.search("tomato", options)
        assert {h.path for h in second.hits} == {"garden.md", "greenhouse.md"}
        # The note the query names leads on its path tier: the names table was rebuilt.
        named = searcher.search("greenhouse", options)
        assert named.hits[0].path == "greenhouse.md"
        assert named.hits[0].explain.tier != "none"
    finally:
        searcher.close()


def _generation(index_dir: Path) -> int:
    store = Store(index_dir, readonly=True)
    try:
        return store.generation()
    finally:
        store.close()
