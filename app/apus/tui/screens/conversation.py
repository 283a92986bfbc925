"""A conversation full-screen, scrolled to the passage that matched."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer

from apus.tui.errors import NotifiesWorkerErrors
from apus.tui.live import LiveMemory
from apus.tui.widgets.conversation import ConversationView


class ConversationScreen(NotifiesWorkerErrors, Screen[None]):
    """Opened from a transcript hit: the messages around it, the matched ones marked."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,q",
            "app.pop_screen",
            "Back",
            id="close_conversation",
            tooltip="Back to results",
        ),
    ]

    def __init__(
        self, live: LiveMemory, session_key: str, start_line: int = 0, end_line: int = 0
    ) -> None:
        super().__init__()
        self.live = live
        self.session_key = session_key
        self.start_line = start_line
        self.end_line = end_line

    def compose(self) -> ComposeResult:
        yield ConversationView(self.live, id="conversation")
        yield Footer()

    def on_mount(self) -> None:
        view = self.query_one(ConversationView)
        view.show(self.session_key, self.start_line, self.end_line)
        view.focus_text()

    def selected_path(self) -> str | None:
        return None  # a transcript is not a note: nothing to copy or edit
