"""Setup step 4: the choices are saved; the first index runs, with its progress."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, ProgressBar, Static

from apus.clients.connect import ClientState
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
        self.clients: list[ClientState] = []  # agent clients found here, offered once ready

    def compose(self) -> ComposeResult:
        yield Static("", id="index-saved", markup=False)
        yield Static("Starting…", id="index-phase", markup=False)
        yield ProgressBar(id="index-bar", show_eta=False)
        yield Static("", id="index-ready", markup=False)
        yield Static("", id="index-connect", markup=False)
        yield Horizontal(id="index-clients")

    def on_mount(self) -> None:
        self.query_one("#index-bar", ProgressBar).display = False
        self.query_one("#index-connect", Static).display = False
        self.query_one("#index-clients", Horizontal).display = False

    def offer_clients(self, states: list[ClientState]) -> None:
        """The agent clients installed here: each can be connected to this vault once
        keyword search works (a button each; those that have Apus are only named)."""
        self.clients = [state for state in states if state.found and not state.problem]
        if self.keyword_ready:
            self._show_offer()

    def show_connected(self, name: str, text: str, ok: bool) -> None:
        button = self.query_one(f"#connect-{name}", Button)
        button.disabled = ok
        if ok:
            labels = {state.client.name: state.client.label for state in self.clients}
            button.label = f"✓ {labels[name]}"
        self.query_one("#index-connect", Static).update(text)

    def _show_offer(self) -> None:
        waiting = [state for state in self.clients if not state.entries]
        if not self.clients or self.query("#index-clients Button"):
            return
        having = ", ".join(state.client.label for state in self.clients if state.entries)
        text = (
            "Connect an agent to these notes: Apus adds itself to the agent's own settings "
            "(a backup is kept beside them; `apus connect CLIENT --remove` takes it out)."
        )
        if having:
            text += f" Already connected: {having}."
        status = self.query_one("#index-connect", Static)
        status.update(text)
        status.display = True
        buttons = self.query_one("#index-clients", Horizontal)
        buttons.display = True
        buttons.mount_all(
            Button(
                f"Connect {state.client.label}",
                id=f"connect-{state.client.name}",
                classes="connect-client",
            )
            for state in waiting
        )

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
        self._show_offer()
        self.post_message(self.Changed(self, focus_next=True))
