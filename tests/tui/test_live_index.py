"""Notes changed on disk while the app runs show up in search without a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from apus.tui.app import ApusApp
from apus.tui.widgets.results import ResultList

from .factory import SIZE, make_app, settle

# The watcher reports after this much quiet; the test then polls the screen a bounded number
# of times (the watcher thread and the sync run outside the test's control).
DEBOUNCE_MS = 150
POLLS = 100


def result_paths(app: ApusApp) -> list[str]:
    return [hit.path for hit in app.screen.query_one(ResultList).hits]


async def wait_for(pilot: object, app: ApusApp, predicate: object) -> bool:
    for _ in range(POLLS):
        await settle(pilot)  # type: ignore[arg-type]
        if predicate():  # type: ignore[operator]
            return True
        await pilot.pause(0.1)  # type: ignore[attr-defined]
    return False


async def test_added_edited_and_deleted_notes_follow_the_disk(
    indexed_vault: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__SYNC__WATCH_DEBOUNCE_MS", str(DEBOUNCE_MS))
    app = make_app(indexed_vault, config_file, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"kayak")
        await settle(pilot)
        assert result_paths(app) == []

        note = indexed_vault / "notes" / "kayak.md"
        note.write_text("# Kayak trip\n\nPaddled the Biesbosch in the kayak.\n", encoding="utf-8")
        assert await wait_for(pilot, app, lambda: result_paths(app) == ["notes/kayak.md"])

        garden = indexed_vault / "notes" / "garden.md"
        garden.write_text("# Garden\n\nThe kayak lives behind the shed now.\n", encoding="utf-8")
        assert await wait_for(
            pilot, app, lambda: sorted(result_paths(app)) == ["notes/garden.md", "notes/kayak.md"]
        )

        note.unlink()
        assert await wait_for(pilot, app, lambda: result_paths(app) == ["notes/garden.md"])
        assert app.counts.startswith("5 notes")
