"""Pilot tests of browse, status, help, the command palette, key remapping and quitting."""

from __future__ import annotations

from pathlib import Path

from textual.notifications import Notify
from textual.widgets import OptionList, Static, TabbedContent, Tree

from apus.config import update_config_file
from apus.tui.screens.browse import BrowseScreen
from apus.tui.screens.help import HelpScreen
from apus.tui.screens.search import SearchScreen
from apus.tui.screens.status import StatusScreen
from apus.tui.widgets.preview import NotePreview
from apus.tui.widgets.results import ResultList
from apus.tui.widgets.status_bar import StatusBar

from .factory import SIZE, Recorder, make_app, settle


def text_of(widget: Static) -> str:
    return str(widget.render())


async def test_status_bar_shows_keyword_search_and_the_counts(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(StatusBar)
        assert text_of(bar.query_one("#status-provider", Static)) == (
            "○ keyword search (embeddings off)"
        )
        chunks = app.load_status(deep=False).chunks
        assert text_of(bar.query_one("#status-counts", Static)) == f"5 notes · {chunks} chunks"


async def test_status_screen_reports_like_memory_status(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f4")
        await settle(pilot)
        assert isinstance(app.screen, StatusScreen)
        body = text_of(app.screen.query_one("#status-body", Static))
        assert "Vault       ~/notes" in body
        assert "Keyword     ready" in body
        assert "Embeddings  off: provider is none" in body
        await pilot.press("escape")
        assert isinstance(app.screen, SearchScreen)


async def test_browse_lists_dated_notes_by_day_and_previews_them(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f3")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BrowseScreen)
        days = screen.query_one("#days", Tree)
        months = [str(node.label) for node in days.root.children]
        assert months == ["November 2026"]
        leaves = [node.data for node in days.root.children[0].children]
        assert leaves == ["daily/2026-11-27.md", "daily/2026-11-20.md"]
        recent = screen.query_one("#recent", OptionList)
        assert recent.option_count == 5

        screen.query_one(TabbedContent).active = "tab-days"
        await pilot.pause()
        days.focus()
        days.move_cursor(days.root.children[0].children[1])
        await settle(pilot)
        document = screen.query_one(NotePreview).document
        assert document is not None and document.rel_path == "daily/2026-11-20.md"
        await pilot.press("f2")
        assert isinstance(app.screen, SearchScreen)


async def test_help_lists_every_binding_id(indexed_vault: Path, config_file: Path) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        text = text_of(app.screen.query_one(Static))
        for binding_id in ("help", "sync_index", "edit_note", "clear_search", "setup_next"):
            assert binding_id in text
        await pilot.press("escape")
        assert isinstance(app.screen, SearchScreen)


async def test_keys_are_remapped_by_id_from_config(indexed_vault: Path, config_file: Path) -> None:
    update_config_file(
        {"tui.keys": {"show_status": "f9", "no_such_key": "f10"}}, config_file=config_file
    )
    app = make_app(indexed_vault, config_file)
    recorder = Recorder(Notify)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        assert any("no_such_key" in text for text in recorder.notifications())
        await pilot.press("f4")
        assert isinstance(app.screen, SearchScreen)
        await pilot.press("f9")
        await settle(pilot)
        assert isinstance(app.screen, StatusScreen)


async def test_palette_toggles_recency_and_mmr(indexed_vault: Path, config_file: Path) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.resolved_search_options().recency is False  # off in the test environment
        assert app.resolved_search_options().mmr is True
        for words in ("recency boost", "diversity"):
            await pilot.press("ctrl+p")
            await pilot.pause()
            await pilot.press(*words)
            await settle(pilot)
            await pilot.press("enter")
            await settle(pilot)
        assert app.resolved_search_options().recency is True
        assert app.resolved_search_options().mmr is False


async def test_quitting_stops_the_watcher_and_the_index_update(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        memory = app.memory
        assert memory.watching
        assert memory.syncs is not None and not memory.syncs.stopped
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert not memory.watching
    assert memory.syncs.stopped
    assert app.return_code == 0  # it quit, and cleanly


async def test_switch_vault_from_the_palette(
    indexed_vault: Path, config_file: Path, tmp_path: Path
) -> None:
    other = tmp_path / "home" / "work-notes"
    other.mkdir()
    (other / "standup.md").write_text("# Standup\n\nShip the zeppelin feature.\n", "utf-8")
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"switch vault")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("ctrl+u", *"~/work-notes", "enter")
        await settle(pilot)
        assert app.vault == other
        assert "work-notes" in config_file.read_text(encoding="utf-8")
        await pilot.press(*"zeppelin")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        assert [hit.path for hit in screen.query_one(ResultList).hits] == ["standup.md"]
        assert app.counts.startswith("1 note ")
