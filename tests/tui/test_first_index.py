"""The app during a first index: the status bar says how far the notes are read, and search
by words already finds the notes of the first committed batch."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from apus.tui.screens.search import SearchScreen
from apus.tui.widgets.status_bar import StatusBar
from support.holds import Hold

from .factory import SIZE, make_app, settle, write_vault

NOTES = {f"notes/n{n:04}.md": f"# Note {n}\n\nA wren, marker{n:04}.\n" for n in range(1200)}


async def test_a_first_index_is_searchable_from_its_first_batch_and_says_so(
    tmp_path: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "none")
    hold = Hold(tmp_path / "hold")  # the app's sync stops once 500 notes are committed
    for name, value in hold.env("index:500").items():
        monkeypatch.setenv(name, value)
    vault = write_vault(tmp_path / "home" / "notes", NOTES)
    app = make_app(vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        while hold.held() is None:
            await pilot.pause(0.01)
        label = app.screen.query_one(StatusBar).query_one("#status-work", Static)
        while "500/1,200" not in str(label.render()):
            await pilot.pause(0.01)
        assert str(label.render()).startswith("Reading notes 500/1,200")
        await pilot.press(*"wren")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        while screen.response is None or not screen.response.hits:
            await pilot.pause(0.01)
        assert screen.response.legs["keyword"].ran
        hold.release()
        await settle(pilot)
