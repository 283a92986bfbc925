"""Command palette entries; each screen gets only the commands that make sense there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from textual.app import SystemCommand

from apus.search.options import SearchOptions


class CommandHost(Protocol):
    """What the palette's commands run: the app's actions (the app hands itself in)."""

    def search_options(self) -> SearchOptions: ...
    def action_sync_index(self) -> None: ...
    def action_rebuild_index(self) -> None: ...
    def action_reembed(self) -> None: ...
    def action_switch_vault(self) -> None: ...
    def action_toggle_mmr(self) -> None: ...
    def action_toggle_recency(self) -> None: ...
    def action_copy_path(self) -> None: ...
    def action_edit_selected(self) -> None: ...
    def action_open_config(self) -> None: ...
    def action_show_status(self) -> None: ...
    def action_show_search(self) -> None: ...
    def action_show_browse(self) -> None: ...
    def action_setup(self) -> None: ...
    def action_help(self) -> None: ...


def apus_commands(app: CommandHost, selected_path: str | None) -> Iterator[SystemCommand]:
    """Index, vault, ranking toggles, note (when one is selected) and app commands."""
    yield SystemCommand(
        "Update index", "Index notes changed since the last sync", app.action_sync_index
    )
    yield SystemCommand(
        "Rebuild index",
        "Re-read every note and rebuild the keyword and vector indexes",
        app.action_rebuild_index,
    )
    yield SystemCommand(
        "Force re-embed",
        "Embed every passage again with the current model (ignores cached vectors)",
        app.action_reembed,
    )
    yield SystemCommand("Switch vault…", "Search another notes folder", app.action_switch_vault)
    options = app.search_options()
    yield SystemCommand(
        f"Turn diversity (MMR) {'off' if options.mmr else 'on'}",
        "Re-order results so near-duplicate passages do not crowd the top",
        app.action_toggle_mmr,
    )
    yield SystemCommand(
        f"Turn recency boost {'off' if options.recency else 'on'}",
        "Rank recent dated notes higher (30-day half-life)",
        app.action_toggle_recency,
    )
    if selected_path is not None:
        path = selected_path
        yield SystemCommand("Copy path", f"Copy the full path of {path}", app.action_copy_path)
        yield SystemCommand("Edit note", f"Open {path} in $EDITOR", app.action_edit_selected)
    yield SystemCommand("Open config file", "Edit config.toml in $EDITOR", app.action_open_config)
    yield SystemCommand("Show status", "Index and embedding status", app.action_show_status)
    yield SystemCommand("Search", "Go to the search screen", app.action_show_search)
    yield SystemCommand("Browse", "Browse notes by folder, recency and day", app.action_show_browse)
    yield SystemCommand("Run setup", "Choose folder, provider and model again", app.action_setup)
    yield SystemCommand("Help", "Every key and what it does", app.action_help)
