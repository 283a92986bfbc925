"""A screen with the status bar: the app binds the bar's state to it when it makes the screen."""

from __future__ import annotations

from textual.reactive import reactive
from textual.screen import Screen

from apus.tui.state import BackgroundWork, ProviderView
from apus.tui.widgets.status_bar import StatusBar


class StatusBarScreen(Screen[None]):
    """Holds what the status bar shows, bound (`data_bind`) to the app's state by the app."""

    provider: reactive[ProviderView] = reactive(ProviderView("unknown", "opening the index…"))
    counts: reactive[str] = reactive("")
    background: reactive[BackgroundWork | None] = reactive(None)

    def status_bar(self) -> StatusBar:
        return StatusBar().data_bind(
            StatusBarScreen.provider, StatusBarScreen.counts, StatusBarScreen.background
        )
