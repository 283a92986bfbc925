"""Pilot tests of the search screen on a keyword-only vault: typing, preview, reader, errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.notifications import Notify
from textual.widgets import Input, Label, Static
from textual.widgets.markdown import MarkdownBlock

from apus.tui.screens.reader import ReaderScreen
from apus.tui.screens.search import SearchScreen
from apus.tui.widgets.preview import NotePreview
from apus.tui.widgets.results import ResultList
from support.tiny_cross_encoder import build

from .factory import SIZE, Recorder, make_app, settle


def result_paths(app: object) -> list[str]:
    screen = app.screen  # type: ignore[attr-defined]
    return [hit.path for hit in screen.query_one(ResultList).hits]


async def test_typing_shows_keyword_results_with_a_preview_of_the_passage(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    recorder = Recorder(SearchScreen.ResultsReady)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"moka")
        await settle(pilot)
        assert result_paths(app) == ["notes/coffee-brewing.md"]
        info = str(app.screen.query_one("#search-info", Label).render())
        assert info.startswith("1 hit · keyword")
        # provider = none: one keyword pass answers; no hybrid pass follows.
        ready = recorder.of(SearchScreen.ResultsReady)
        assert {m.response.mode for m in ready} == {"keyword"}  # type: ignore[attr-defined]
        assert ready[-1].final  # type: ignore[attr-defined]

        preview = app.screen.query_one(NotePreview)
        assert preview.document is not None
        assert preview.document.rel_path == "notes/coffee-brewing.md"
        hit = app.screen.query_one(ResultList).hits[0]
        marked = [b for b in preview.query(MarkdownBlock) if b.has_class("-match")]
        assert marked, "the matching passage is marked in the preview"
        first_line = preview.document.first_line
        for block in marked:
            begin, end = block.source_range
            assert begin + first_line <= hit.end_line and end + first_line > hit.start_line


async def test_a_later_keystroke_replaces_the_results(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"coffee")
        await settle(pilot)
        assert set(result_paths(app)) == {
            "notes/coffee-brewing.md",
            "MEMORY.md",
            "daily/2026-11-20.md",
        }
        await pilot.press(*["backspace"] * len("coffee"), *"garden")
        await settle(pilot)
        assert app.screen.query_one("#query", Input).value == "garden"
        assert result_paths(app) == ["notes/garden.md"]


async def test_no_match_says_so_and_escape_clears(indexed_vault: Path, config_file: Path) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"zeppelin")
        await settle(pilot)
        message = app.screen.query_one("#results-message", Static)
        assert message.display
        assert "No notes match “zeppelin”" in str(message.render())
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.query_one("#query", Input).value == ""
        assert result_paths(app) == []
        assert "Type to search your notes (5 notes" in str(message.render())


async def test_enter_reads_the_note_full_screen_and_escape_returns(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"tomatoes")
        await settle(pilot)
        await pilot.press("down")  # into the results
        assert app.focused is app.screen.query_one(ResultList)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ReaderScreen)
        document = app.screen.query_one(NotePreview).document
        assert document is not None and document.rel_path == "notes/garden.md"
        assert document.title == "Garden"
        await pilot.press("escape")
        assert isinstance(app.screen, SearchScreen)


async def test_edit_without_an_editor_explains_how_to_set_one(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    recorder = Recorder(Notify)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        await pilot.press(*"tomatoes")
        await settle(pilot)
        await pilot.press("down", "e")
        await settle(pilot)
        assert any("$EDITOR" in text for text in recorder.notifications())
        assert isinstance(app.screen, SearchScreen)


async def test_a_failed_index_update_is_a_notification_and_the_app_keeps_running(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    recorder = Recorder(Notify)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        shutil.rmtree(indexed_vault)
        await pilot.press("ctrl+r")
        await settle(pilot)
        failures = [t for t in recorder.notifications() if t.startswith("Indexing failed")]
        assert failures and "does not exist" in failures[0]
        # Still answering from the index built before the folder went away.
        await pilot.press(*"garden")
        await settle(pilot)
        assert result_paths(app) == ["notes/garden.md"]


async def test_the_info_line_says_whether_the_results_were_reranked(
    indexed_vault: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__RERANK__ENABLED", "true")  # a model never pulled
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"moka")
        await settle(pilot)
        assert result_paths(app) == ["notes/coffee-brewing.md"]
        info = str(app.screen.query_one("#search-info", Label).render())
        assert "not reranked: the reranking model ms-marco-minilm-l12-v2 is not downloaded" in info
    model = build(tmp_path / "reranker")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__RERANK__LOCAL__MODELPATH", str(model))
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"moka")
        await settle(pilot)
        info = str(app.screen.query_one("#search-info", Label).render())
        assert info.startswith("1 hit · keyword · reranked")
