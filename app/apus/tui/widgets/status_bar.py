"""The one-line status bar: embeddings state, notes and chunks indexed, background work."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Label, ProgressBar

from apus.tui.format import eta_text
from apus.tui.state import BackgroundWork, ProviderView

_ICONS = {
    "ready": "●",
    "embedding": "◐",
    "rebuilding": "◐",
    "keyword-only": "○",
    "paused": "‖",
    "unavailable": "✗",
    "off": "○",
    "unknown": "…",
}


class StatusBar(Horizontal):
    """Shows `provider`, `counts` and `background`, which its screen binds (`data_bind`)."""

    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        background: $panel;
        padding: 0 1;
    }
    StatusBar Label {
        height: 1;
        margin-right: 2;
    }
    StatusBar #status-provider { width: auto; max-width: 60%; }
    StatusBar #status-provider.-ready { color: $text-success; }
    StatusBar #status-provider.-embedding { color: $text-warning; }
    StatusBar #status-provider.-rebuilding { color: $text-warning; }
    StatusBar #status-provider.-keyword-only { color: $text-warning; }
    StatusBar #status-provider.-paused { color: $text-error; }
    StatusBar #status-provider.-unavailable { color: $text-error; }
    StatusBar #status-provider.-off { color: $text-muted; }
    StatusBar #status-counts { width: auto; color: $text-muted; }
    StatusBar #status-spacer { width: 1fr; margin: 0; }
    StatusBar #status-work { width: auto; }
    StatusBar ProgressBar { width: 30; height: 1; }
    StatusBar ProgressBar Bar { width: 20; }
    """

    def compose(self) -> ComposeResult:
        yield Label(id="status-provider", markup=False)
        yield Label(id="status-counts", markup=False)
        yield Label(id="status-spacer")
        yield Label(id="status-work", markup=False)
        yield ProgressBar(id="status-bar", show_eta=False)

    provider: reactive[ProviderView] = reactive(ProviderView("unknown", ""), init=False)
    counts: reactive[str] = reactive("", init=False)
    background: reactive[BackgroundWork | None] = reactive(None, init=False)

    def watch_provider(self, view: ProviderView) -> None:
        self.show_provider(view)

    def watch_counts(self, counts: str) -> None:
        self.show_counts(counts)

    def watch_background(self, work: BackgroundWork | None) -> None:
        self.show_work(work)

    def show_provider(self, view: ProviderView) -> None:
        label = self.query_one("#status-provider", Label)
        label.update(f"{_ICONS.get(view.state, '')} {view.text}")
        label.tooltip = view.detail or None
        for state in _ICONS:
            label.set_class(state == view.state, f"-{state}")

    def show_counts(self, counts: str) -> None:
        self.query_one("#status-counts", Label).update(counts)

    def show_work(self, work: BackgroundWork | None) -> None:
        label = self.query_one("#status-work", Label)
        bar = self.query_one("#status-bar", ProgressBar)
        bar.display = work is not None and work.total > 0
        if work is None:
            label.update("")
            return
        if work.total > 0:
            bar.update(total=work.total, progress=work.done)
            text = f"{work.label} {work.done:,}/{work.total:,}"
        else:
            text = f"{work.label}…"
        eta = eta_text(work.eta_seconds)
        label.update(f"{text} · {eta}" if eta else text)
