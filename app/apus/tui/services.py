"""The app's domain side: settings, the Searcher, the embedding provider, and background work.

Indexing, the vault watcher and the status poll run in thread workers on the app, so quitting
cancels them; the domain sees each worker's `cancelled_event` as its cancel event.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from textual import work
from textual.app import App
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.worker import Worker, WorkerState, get_current_worker

from apus import paths
from apus.cli.context import AppContext
from apus.config import Settings
from apus.core import index_status, open_searcher, sync_index
from apus.embed.providers import ProviderResolution, resolve_provider
from apus.errors import IndexBusyError
from apus.index.status import IndexStatus
from apus.index.sync import SyncProgress, SyncReport
from apus.search.engine import LegReport, Searcher
from apus.tui.errors import error_text, notify_worker_error
from apus.tui.format import plural
from apus.tui.state import BackgroundWork, ProviderView, VectorEvidence, provider_view
from apus.watch import watch_notes

_PHASES = {
    "scan": "Scanning notes",
    "index": "Reading notes",
    "keyword": "Building keyword index",
    "embed": "Embedding passages",
}
# The status bar re-reads the index status this often; it mostly matters while another
# process rebuilds the vectors (this app's own indexing reports progress directly).
STATUS_POLL_S = 30.0
# Another apus process holds the index writer lock: try again after this long.
BUSY_RETRY_S = 5.0


class AppServices(App[None]):
    """One vault's Searcher, provider and background work; the UI (ApusApp) builds on it."""

    provider: reactive[ProviderView] = reactive(ProviderView("unknown", "opening the index…"))
    counts: reactive[str] = reactive("")
    background: reactive[BackgroundWork | None] = reactive(None)
    sync_report: reactive[SyncReport | None] = reactive(None, always_update=True)
    # Bumped when results may differ: the index changed or a ranking toggle flipped.
    results_generation: reactive[int] = reactive(0)
    vault_generation: reactive[int] = reactive(0)

    @dataclass
    class IndexProgress(Message):
        progress: SyncProgress

        def can_replace(self, message: Message) -> bool:
            return (
                isinstance(message, AppServices.IndexProgress)
                and message.progress.phase == self.progress.phase
            )

    @dataclass
    class StatusLoaded(Message):
        status: IndexStatus

    @dataclass
    class NotesChanged(Message):
        paths: frozenset[Path]

    def __init__(self, app_ctx: AppContext, *, watch: bool | None = None) -> None:
        super().__init__()
        self.app_ctx = app_ctx
        self.watch_override = watch
        self._searcher: Searcher | None = None
        self._resolution: ProviderResolution | None = None
        self._searcher_lock = threading.Lock()
        self._services = False
        self._queued_sync: bool | None = None  # None: nothing queued; else the force flag
        self._phase = ""
        self._embeddings: dict[str, object] | None = None
        self._status_at = 0.0
        self._evidence: VectorEvidence | None = None
        self._embed_warning = ""
        self._poll: Timer | None = None

    # -- settings and the domain objects ---------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.app_ctx.settings()

    @property
    def vault(self) -> Path:
        return self.settings.vault_path()

    @property
    def config_file(self) -> Path:
        return self.app_ctx.config_file or paths.config_file()

    def searcher(self) -> Searcher:
        """The vault's Searcher, opened on first use; safe to call from worker threads."""
        with self._searcher_lock:
            if self._searcher is None:
                # The app runs its own syncs, so no detached re-embed is started here.
                self._searcher = open_searcher(
                    self.settings, resolution=self._provider_locked(), start_rebuild=False
                )
            return self._searcher

    def embedding_provider(self) -> ProviderResolution:
        """The one provider (and managed server client) shared by searching and indexing."""
        with self._searcher_lock:
            return self._provider_locked()

    def _provider_locked(self) -> ProviderResolution:
        if self._resolution is None:
            self._resolution = resolve_provider(self.settings.search)
        return self._resolution

    @staticmethod
    def vector_available(searcher: Searcher) -> bool:
        """Whether a hybrid pass can add anything after the keyword pass."""
        if searcher.vector_leg is None:
            return False
        usable, _reason = searcher.vector_leg.status()
        return usable

    def load_status(self, *, deep: bool) -> IndexStatus:
        return index_status(self.settings, deep=deep)

    def note_vector_leg(self, report: LegReport) -> None:
        """A hybrid search just showed whether embeddings answer; the status bar follows."""
        self._evidence = VectorEvidence(report, time.monotonic())
        self._show_provider()

    def _show_provider(self) -> None:
        self.provider = provider_view(self._embeddings, self._status_at, self._evidence)

    # -- start, stop, switch -------------------------------------------------------------------

    def _start_services(self) -> None:
        self._services = True
        self.refresh_bindings()
        self.refresh_status()
        self.request_sync()
        sync = self.settings.search.sync
        watch = sync.watch if self.watch_override is None else self.watch_override
        if watch:
            roots = [self.vault, *self.settings.extra_roots()]
            self._watch(roots, sync.watch_debounce_ms)
        self._poll = self.set_interval(STATUS_POLL_S, self.refresh_status, name="status-poll")

    def _stop_services(self) -> None:
        """Cancel background work (the domain sees the workers' cancel events) and close."""
        for group in ("sync", "watch", "status"):
            self.workers.cancel_group(self, group)
        self._queued_sync = None
        if self._poll is not None:
            self._poll.stop()
            self._poll = None
        with self._searcher_lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
            if self._resolution is not None and self._resolution.embedder is not None:
                # Unregisters from the managed embedding server; it stops unless another
                # apus process still uses it.
                self._resolution.embedder.close()
            self._resolution = None
        self.background = None

    def _use_vault(self, vault: Path) -> None:
        self._stop_services()
        self.app_ctx = AppContext(
            vault=vault, config_file=self.app_ctx.config_file, overrides=self.app_ctx.overrides
        )
        self._embeddings = None
        self._evidence = None
        self.counts = ""
        self._show_provider()
        self._start_services()
        self.vault_generation += 1

    # -- indexing ------------------------------------------------------------------------------

    def request_sync(self, *, force: bool = False) -> None:
        """Index now; if a sync is running, run another one after it (forced wins)."""
        running = [w for w in self.workers if w.group == "sync" and not w.is_finished]
        if running:
            self._queued_sync = force or bool(self._queued_sync)
            if force:
                for worker in running:
                    worker.cancel()
            return
        self._phase = ""
        self.background = BackgroundWork("Checking for changes", "scan")
        self._sync(force)

    @work(thread=True, group="sync", exit_on_error=False)
    def _sync(self, force: bool, reembed: bool = False) -> SyncReport:
        worker = get_current_worker()
        return sync_index(
            self.settings,
            resolution=self.embedding_provider(),
            force=force,
            reembed=reembed,
            cancel=worker.cancelled_event,
            progress=lambda event: self.post_message(self.IndexProgress(event)),
        )

    def on_app_services_index_progress(self, message: IndexProgress) -> None:
        event = message.progress
        if event.phase == "embed" and self._phase != "embed":
            # Keyword data is committed: searches can see the new notes already.
            self.results_generation += 1
        self._phase = event.phase
        self.background = BackgroundWork(
            _PHASES.get(event.phase, event.phase),
            event.phase,
            event.done,
            event.total,
            event.eta_seconds,
        )

    def _sync_finished(self, worker: Worker[SyncReport]) -> None:
        self.background = None
        if worker.state == WorkerState.SUCCESS and worker.result is not None:
            report = worker.result
            if (
                report.added
                or report.changed
                or report.removed
                or report.renamed
                or (report.keyword_rebuilt or report.embedded)
            ):
                self.results_generation += 1
            expected = (self._embeddings or {}).get("state") in ("ready", "rebuilding")
            if report.embed_error and expected and report.embed_error != self._embed_warning:
                # Only a failure of embeddings that were working is news; a missing model or
                # provider = none is already in the status bar.
                self.notify(report.embed_error, title="Embeddings", severity="warning")
            self._embed_warning = report.embed_error
            self.sync_report = report
        elif worker.state == WorkerState.ERROR:
            if isinstance(worker.error, IndexBusyError):
                self.background = BackgroundWork(
                    "Waiting for another apus to finish indexing", "busy"
                )
                self.set_timer(BUSY_RETRY_S, self.request_sync)
            else:
                notify_worker_error(self, worker)
        self.refresh_status()
        queued, self._queued_sync = self._queued_sync, None
        if queued is not None and self._services:
            self.request_sync(force=queued)

    def action_sync_index(self) -> None:
        self.request_sync()
        self.notify("Looking for changed notes…", timeout=2)

    def action_rebuild_index(self) -> None:
        self.request_sync(force=True)
        self.notify("Rebuilding the index; keyword search keeps working meanwhile.", timeout=4)

    def action_reembed(self) -> None:
        if any(w.group == "sync" and not w.is_finished for w in self.workers):
            self.notify("The index is being updated; re-embed when it has finished.")
            return
        self._phase = ""
        self.background = BackgroundWork("Re-embedding every passage", "embed")
        self._sync(False, reembed=True)
        self.notify(
            "Rebuilding vectors for the current model; keyword search keeps working.", timeout=4
        )

    # -- watching and status -----------------------------------------------------------------

    @work(thread=True, group="watch", exit_on_error=False)
    def _watch(self, roots: list[Path], debounce_ms: int) -> None:
        worker = get_current_worker()
        watch_notes(
            roots,
            lambda changed: self.post_message(self.NotesChanged(changed)),
            stop=worker.cancelled_event,
            debounce_ms=debounce_ms,
        )

    def on_app_services_notes_changed(self, _message: NotesChanged) -> None:
        if self._services:
            self.request_sync()

    @work(thread=True, exclusive=True, group="status", exit_on_error=False)
    def refresh_status(self) -> None:
        self.post_message(self.StatusLoaded(self.load_status(deep=False)))

    def on_app_services_status_loaded(self, message: StatusLoaded) -> None:
        status = message.status
        self._embeddings = dict(status.embeddings)
        self._status_at = time.monotonic()
        self.counts = (
            f"{plural(status.files, 'note')} · {plural(status.chunks, 'chunk')}"
            if status.indexed
            else "not indexed yet"
        )
        self._show_provider()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group == "sync" and worker.is_finished:
            self._sync_finished(worker)
        elif worker.group == "watch" and event.state == WorkerState.ERROR:
            self.notify(
                f"Live updates stopped ({error_text(worker.error)}). Ctrl+R still indexes.",
                severity="warning",
            )
        elif event.state == WorkerState.ERROR:
            notify_worker_error(self, worker)
