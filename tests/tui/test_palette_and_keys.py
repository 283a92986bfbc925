"""Ctrl+Y and the command palette's index commands, driven as a user drives them."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot

from apus.memory.session import MemoryEvent
from apus.memory.sync_queue import SyncFinished, SyncStarted
from apus.tui.app import ApusApp
from apus.tui.screens.search import SearchScreen

from .factory import SIZE, make_app, settle


async def test_ctrl_y_copies_the_full_path_of_the_selected_note(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"V60")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen) and screen.selected_path() == (
            "notes/coffee-brewing.md"
        )
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert app.clipboard == str(indexed_vault / "notes" / "coffee-brewing.md")


async def _run_from_palette(app: ApusApp, pilot: Pilot[object], words: str) -> list[MemoryEvent]:
    """Choose the palette command matching `words`; what the session told meanwhile."""
    heard: list[MemoryEvent] = []
    assert app.memory is not None
    app.memory.subscribe(heard.append)
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*words)
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    return heard


async def test_palette_rebuild_index_runs_a_forced_sync_that_rebuilds_the_keyword_index(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        heard = await _run_from_palette(app, pilot, "rebuild index")
    started = [e.request for e in heard if isinstance(e, SyncStarted)]
    finished = [e for e in heard if isinstance(e, SyncFinished)]
    assert [(r.force, r.reembed) for r in started] == [(True, False)]
    [done] = finished
    assert done.error is None and done.report is not None
    assert done.report.keyword_rebuilt and done.report.files == 5


async def test_palette_force_reembed_asks_for_every_passage_again(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        heard = await _run_from_palette(app, pilot, "force re-embed")
    started = [e.request for e in heard if isinstance(e, SyncStarted)]
    assert [r.reembed for r in started] == [True]
    [done] = [e for e in heard if isinstance(e, SyncFinished)]
    # Embeddings are off in these tests: the sync runs, and says there is nothing to embed.
    assert done.error is None and done.report is not None
    assert done.report.embedding.state == "off"
