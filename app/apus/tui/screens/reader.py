"""A note full-screen, scrolled to the passage that matched."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer

from apus.tui.widgets.preview import NotePreview


class ReaderScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "app.pop_screen", "Back", id="close_reader", tooltip="Back to results"),
    ]

    def __init__(self, vault: Path, rel_path: str, start_line: int = 0, end_line: int = 0):
        super().__init__()
        self.vault = vault
        self.rel_path = rel_path
        self.start_line = start_line
        self.end_line = end_line

    def compose(self) -> ComposeResult:
        yield NotePreview(id="reader")
        yield Footer()

    def on_mount(self) -> None:
        preview = self.query_one(NotePreview)
        preview.show_note(self.vault, self.rel_path, self.start_line, self.end_line)
        preview.focus_text()

    def selected_path(self) -> str | None:
        return self.rel_path
