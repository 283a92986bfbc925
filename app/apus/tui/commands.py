"""Command palette entries; each screen gets only the commands that make sense there."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from apus.tui.app import ApusApp


@dataclass(frozen=True)
class PaletteCommand:
    name: str
    help: str
    run: Callable[[], object]


class ApusCommands(Provider):
    """Index, vault, ranking toggles, note and app commands."""

    def commands(self) -> Iterator[PaletteCommand]:
        app = cast("ApusApp", self.app)
        yield PaletteCommand(
            "Update index", "Index notes changed since the last sync", app.action_sync_index
        )
        yield PaletteCommand(
            "Rebuild index",
            "Re-read every note and rebuild the keyword and vector indexes",
            app.action_rebuild_index,
        )
        yield PaletteCommand(
            "Force re-embed",
            "Embed every passage again with the current model (ignores cached vectors)",
            app.action_reembed,
        )
        yield PaletteCommand(
            "Switch vault…", "Search another notes folder", app.action_switch_vault
        )
        options = app.resolved_search_options()
        yield PaletteCommand(
            f"Turn diversity (MMR) {'off' if options.mmr else 'on'}",
            "Re-order results so near-duplicate passages do not crowd the top",
            app.action_toggle_mmr,
        )
        yield PaletteCommand(
            f"Turn recency boost {'off' if options.recency else 'on'}",
            "Rank recent dated notes higher (30-day half-life)",
            app.action_toggle_recency,
        )
        path = app.selected_path(self.screen)
        if path is not None:
            yield PaletteCommand("Copy path", f"Copy the full path of {path}", app.action_copy_path)
            yield PaletteCommand("Edit note", f"Open {path} in $EDITOR", app.action_edit_selected)
        yield PaletteCommand(
            "Open config file", "Edit config.toml in $EDITOR", app.action_open_config
        )
        yield PaletteCommand("Show status", "Index and embedding status", app.action_show_status)
        yield PaletteCommand("Search", "Go to the search screen", app.action_show_search)
        yield PaletteCommand(
            "Browse", "Browse notes by folder, recency and day", app.action_show_browse
        )
        yield PaletteCommand(
            "Run setup", "Choose folder, provider and model again", app.action_setup
        )
        yield PaletteCommand("Help", "Every key and what it does", app.action_help)

    async def discover(self) -> Hits:
        for command in self.commands():
            yield DiscoveryHit(command.name, command.run, help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self.commands():
            score = matcher.match(command.name)
            if score > 0:
                yield Hit(score, matcher.highlight(command.name), command.run, help=command.help)
