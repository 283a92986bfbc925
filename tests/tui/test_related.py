"""The related-notes panel under the preview: toggled by a remappable key, fed by the session."""

from __future__ import annotations

from pathlib import Path

from apus.tui.screens.reader import ReaderScreen
from apus.tui.widgets.related import RelatedNotes

from .factory import SIZE, make_app, settle


def related_paths(app: object) -> list[str]:
    panel = app.screen.query_one(RelatedNotes)  # type: ignore[attr-defined]
    return [hit.path for hit in panel.hits]


async def test_the_panel_shows_notes_related_to_the_preview_and_opens_them(
    indexed_vault: Path, config_file: Path
) -> None:
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        panel = app.screen.query_one(RelatedNotes)
        assert not panel.display  # hidden until asked for
        await pilot.press(*"moka")
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert panel.display
        # Keyword-only vault: related by the previewed note's title and headings ("Coffee
        # brewing", "V60", "Moka pot"): MEMORY.md and the daily note mention coffee.
        found = related_paths(app)
        assert "notes/coffee-brewing.md" not in found
        assert "MEMORY.md" in found
        # The same session call the CLI and the agent tool make.
        expected = app.memory.related("notes/coffee-brewing.md", 8).hits
        assert found == [hit.path for hit in expected]
        related_list = panel.query_one("#related-list")
        related_list.focus()
        related_list.highlighted = 0  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ReaderScreen)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert not app.screen.query_one(RelatedNotes).display


async def test_the_toggle_key_is_remapped_by_its_id(indexed_vault: Path, config_file: Path) -> None:
    config_file.write_text('[tui.keys]\ntoggle_related = "f6"\n', encoding="utf-8")
    app = make_app(indexed_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"garden")
        await settle(pilot)
        await pilot.press("f6")
        await settle(pilot)
        assert app.screen.query_one(RelatedNotes).display
