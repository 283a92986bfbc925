"""The one-line status bar: embeddings state, notes and chunks indexed, background work."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
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
    """Follows the app's `provider`, `counts` and `background` reactives."""

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

    def on_mount(self) -> None:
        self.watch(self.app, "provider", self.show_provider)
        self.watch(self.app, "counts", self.show_counts)
        self.watch(self.app, "background", self.show_work)

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
