"""The app's link to its Memory: background syncs, status polls and what the status bar shows.

The session runs syncs and the watcher on its own threads and reports through a listener;
this turns each report into a message on the app's queue, so the app's state only ever
changes on its own thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from textual.message import Message
from textual.notifications import SeverityLevel
from textual.timer import Timer
from textual.worker import Worker
from textual.worker_manager import WorkerManager

from apus.config import Settings, SettingsSource
from apus.index.status import EmbeddingsState, IndexStatus
from apus.indexing.request import SyncRequest
from apus.indexing.sync import SyncReport
from apus.memory import Memory
from apus.memory.session import MemoryEvent, WatchStopped
from apus.memory.sync_queue import SyncFinished, SyncProgressed, SyncStarted
from apus.search.results import LegReport
from apus.tui.errors import error_text
from apus.tui.format import plural
from apus.tui.state import BackgroundWork, ProviderView, VectorEvidence, provider_view

# Embeddings states whose progress the sync's own events carry.
_EMBEDDING = ("embedding", "rebuilding")
# How often, in shares of the vault embedded, the status is read again while embedding.
_COVERAGE_STEPS = 20

# The status bar re-reads the index status this often; it mostly matters while another
# process rebuilds the vectors (this app's own indexing reports progress directly).
STATUS_POLL_S = 30.0


@dataclass
class MemoryEventMessage(Message, namespace="live"):
    """Something happened in the session's background work (posted from its threads)."""

    event: MemoryEvent

    def can_replace(self, message: Message) -> bool:
        # Only progress may be dropped for newer progress of the same phase.
        return (
            isinstance(message, MemoryEventMessage)
            and isinstance(message.event, SyncProgressed)
            and isinstance(self.event, SyncProgressed)
            and message.event.progress.phase == self.event.progress.phase
        )


@dataclass
class StatusLoaded(Message, namespace="live"):
    status: IndexStatus


class LiveHost(Protocol):
    """The state LiveMemory mirrors the session into, and the event loop it runs on: the app.

    A protocol, so that this module (which screens import for the session) never imports
    the app."""

    provider: ProviderView
    counts: str
    background: BackgroundWork | None
    sync_report: SyncReport | None
    index_generation: int

    @property
    def workers(self) -> WorkerManager: ...

    def post_message(self, message: Message) -> bool: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def set_interval(
        self, interval: float, callback: Callable[[], object], *, name: str | None = None
    ) -> Timer: ...

    def run_worker(
        self,
        work: Callable[[], None],
        *,
        thread: bool = False,
        exclusive: bool = False,
        group: str = "default",
        exit_on_error: bool = True,
    ) -> Worker[Any]: ...


class LiveMemory:
    """Opens the app's Memory on a vault, keeps it live, and mirrors it into the app's state.

    Screens and widgets get this (not the app) for the session: it stays the same object
    while the vault, and so the Memory behind it, changes."""

    def __init__(self, app: LiveHost) -> None:
        self.app = app
        self.memory: Memory | None = None
        self._embeddings: EmbeddingsState | None = None
        self._status_at = 0.0
        self._evidence: VectorEvidence | None = None
        self._embed_warning = ""
        self._phase = ""
        self._coverage_at = 0  # the embed progress at which coverage was last read
        self._poll: Timer | None = None

    @property
    def session(self) -> Memory:
        """The open vault's session (only while a vault is open)."""
        if self.memory is None:
            raise RuntimeError("no vault is open")
        return self.memory

    @property
    def settings(self) -> Settings:
        return self.session.settings

    @property
    def vault(self) -> Path:
        return self.session.settings.vault_path()

    # -- opening and closing ----------------------------------------------------------------

    def open(self, source: SettingsSource, *, watch: bool | None) -> Memory:
        self.close()
        memory = Memory(source)
        memory.subscribe(self._hear)
        self.memory = memory
        self._embeddings = None
        self._evidence = None
        self._show_provider()
        self.app.background = BackgroundWork("Checking for changes", "scan")
        memory.start_live(watch=watch)
        self.refresh_status()
        self._poll = self.app.set_interval(STATUS_POLL_S, self.refresh_status, name="status-poll")
        return memory

    def _hear(self, event: MemoryEvent) -> None:
        """A listener on the session (called on its threads): the event goes to the app."""
        self.app.post_message(MemoryEventMessage(event))

    def close(self) -> None:
        """Stop background work (a running sync keeps what it committed) and close."""
        if self._poll is not None:
            self._poll.stop()
            self._poll = None
        for worker in self.app.workers:
            if worker.group == "status":
                worker.cancel()
        if self.memory is not None:
            self.memory.close()
            self.memory = None
        self.app.background = None

    # -- syncing -----------------------------------------------------------------------------

    def request_sync(self, request: SyncRequest | None = None) -> None:
        if self.memory is None:
            return
        queue = self.memory.syncs
        reembed = request is not None and request.reembed
        if queue is not None and queue.idle:
            label = "Re-embedding every passage" if reembed else "Checking for changes"
            self.app.background = BackgroundWork(label, "embed" if reembed else "scan")
        self.memory.request_sync(request)

    @property
    def syncing(self) -> bool:
        queue = self.memory.syncs if self.memory is not None else None
        return queue is not None and not queue.idle

    def on_event(self, event: MemoryEvent) -> None:
        if isinstance(event, SyncStarted):
            self._phase = ""
            self._coverage_at = 0
        elif isinstance(event, SyncProgressed):
            self._progressed(event)
        elif isinstance(event, SyncFinished):
            self._finished(event)
        elif isinstance(event, WatchStopped):
            self.app.notify(
                f"Live updates stopped ({error_text(event.error)}). Ctrl+R still indexes.",
                severity="warning",
            )

    def _progressed(self, event: SyncProgressed) -> None:
        progress = event.progress
        if progress.phase == "embed" and self._phase != "embed":
            # Keyword data is committed: searches can see the new notes already.
            self.app.index_generation += 1
            self.refresh_status()  # embedding runs now: the provider's state says so
        self._phase = progress.phase
        embeddings = self._embeddings
        if progress.phase == "embed" and embeddings and embeddings.state in _EMBEDDING:
            # The left of the status bar follows the same events as the right: one figure.
            self._embeddings = replace(
                embeddings,
                done=progress.done,
                total=progress.total,
                eta_seconds=progress.eta_seconds,
            )
            self._show_provider()
            # What meaning search covers grows with the FAISS file, which no event carries:
            # read it again once it has any, then every twentieth of the vault.
            grown = progress.done - self._coverage_at >= progress.total / _COVERAGE_STEPS
            if progress.done and (embeddings.coverage is None or grown):
                self._coverage_at = progress.done
                self.refresh_status()
        self.app.background = BackgroundWork(
            progress.label, progress.phase, progress.done, progress.total, progress.eta_seconds
        )

    def _finished(self, event: SyncFinished) -> None:
        self.app.background = None
        if event.busy:
            self.app.background = BackgroundWork(
                "Waiting for another apus to finish indexing", "busy"
            )
        elif event.error is not None:
            self.app.notify(
                error_text(event.error), title="Indexing failed", severity="error", timeout=8
            )
        elif event.report is not None:
            report = event.report
            if report.changed_anything:
                self.app.index_generation += 1
            self._warn_about_embeddings(report.embedding.message())
            self.app.sync_report = report
        self.refresh_status()

    def _warn_about_embeddings(self, message: str) -> None:
        """Only a failure of embeddings that were working is news; a missing model or
        provider = none is already in the status bar."""
        expected = self._embeddings is not None and self._embeddings.state in (
            "ready",
            "embedding",
            "rebuilding",
        )
        if message and expected and message != self._embed_warning:
            self.app.notify(message, title="Embeddings", severity="warning")
        self._embed_warning = message

    # -- status ------------------------------------------------------------------------------

    def refresh_status(self) -> None:
        if self.memory is not None:
            self.app.run_worker(
                self._load_status, thread=True, exclusive=True, group="status", exit_on_error=False
            )

    def _load_status(self) -> None:
        memory = self.memory
        if memory is not None:
            self.app.post_message(StatusLoaded(memory.status()))

    def on_status(self, status: IndexStatus) -> None:
        self._embeddings = status.embeddings
        self._status_at = time.monotonic()
        counts = (
            f"{plural(status.files, 'note')} · {plural(status.chunks, 'chunk')}"
            if status.indexed
            else "not indexed yet"
        )
        outcome = status.last_sync_outcome
        if outcome is not None and not outcome.ok:
            # Stands until a sync succeeds (the queue retries by itself); F4 has the fix.
            error = outcome.error or ""
            counts += f" · ✗ sync failed: {error[:77] + '…' if len(error) > 80 else error}"
        self.app.counts = counts
        self._show_provider()

    def note_vector_leg(self, report: LegReport) -> None:
        """A hybrid search just showed whether embeddings answer; the status bar follows."""
        self._evidence = VectorEvidence(report, time.monotonic())
        self._show_provider()

    def _show_provider(self) -> None:
        self.app.provider = provider_view(self._embeddings, self._status_at, self._evidence)
