"""Setup step 4: the choices are saved; the first index runs, with its progress."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import ProgressBar, Static

from apus.indexing.sync import SyncReport
from apus.tui.format import eta_text
from apus.tui.state import BackgroundWork
from apus.tui.widgets.setup.step import SetupStep


class IndexStep(SetupStep):
    """Ready once keyword search works (meaning search may still be on its way)."""

    key = "index"
    heading = "Indexing your notes"

    def __init__(self) -> None:
        super().__init__()
        self.keyword_ready = False

    def compose(self) -> ComposeResult:
        yield Static("", id="index-saved", markup=False)
        yield Static("Starting…", id="index-phase", markup=False)
        yield ProgressBar(id="index-bar", show_eta=False)
        yield Static("", id="index-ready", markup=False)

    def on_mount(self) -> None:
        self.query_one("#index-bar", ProgressBar).display = False

    @property
    def ready(self) -> bool:
        return self.keyword_ready

    def show_saved(self, text: str) -> None:
        self.query_one("#index-saved", Static).update(text)

    def show_work(self, work: BackgroundWork) -> None:
        bar = self.query_one("#index-bar", ProgressBar)
        bar.display = work.total > 0
        if work.total:
            bar.update(total=work.total, progress=work.done)
        eta = eta_text(work.eta_seconds)
        counted = f" {work.done:,} of {work.total:,}" if work.total else "…"
        self.query_one("#index-phase", Static).update(
            f"{work.label}{counted}{' · ' + eta if eta else ''}"
        )
        if work.phase == "embed":
            self._keyword_is_ready(
                "Keyword search is ready. Meaning search is being prepared in the background; "
                "you can start searching now."
            )

    def show_report(self, report: SyncReport) -> None:
        self.query_one("#index-phase", Static).update(
            f"Indexed {report.files:,} notes ({report.chunks:,} passages)."
        )
        self.query_one("#index-bar", ProgressBar).display = False
        self._keyword_is_ready("All set. Your notes are searchable.")

    def _keyword_is_ready(self, text: str) -> None:
        self.keyword_ready = True
        self.query_one("#index-ready", Static).update(text)
        self.post_message(self.Changed(self, focus_next=True))
