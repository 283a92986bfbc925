"""The Apus app: screens, key bindings, and the background work (index, watch, status)."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from apus import paths
from apus.cli.context import AppContext
from apus.config import Settings, update_config_file
from apus.core import index_status, open_searcher, sync_index
from apus.embed.providers import ProviderResolution, resolve_provider
from apus.errors import IndexBusyError
from apus.index.status import IndexStatus
from apus.index.sync import SyncProgress, SyncReport
from apus.search.engine import LegReport, Searcher, SearchOptions
from apus.setup import SetupChoices, detect_hardware
from apus.tui.commands import ApusCommands
from apus.tui.editor import NoEditorError, editor_command
from apus.tui.errors import error_text, notify_worker_error
from apus.tui.format import home_relative, plural
from apus.tui.messages import OpenInEditor, OpenInReader
from apus.tui.notes import note_path
from apus.tui.screens.browse import BrowseScreen
from apus.tui.screens.folder_picker import FolderPickerScreen
from apus.tui.screens.help import HelpScreen, HelpSections
from apus.tui.screens.reader import ReaderScreen
from apus.tui.screens.search import SearchScreen
from apus.tui.screens.status import StatusScreen
from apus.tui.screens.wizard import SetupScreen, WizardOptions
from apus.tui.state import BackgroundWork, ProviderView, VectorEvidence, provider_view
from apus.tui.widgets.preview import NotePreview
from apus.tui.widgets.results import ResultList
from apus.watch import watch_notes

_PHASES = {
    "scan": "Scanning notes",
    "index": "Reading notes",
    "keyword": "Building keyword index",
    "embed": "Embedding passages",
}
_VAULT_ACTIONS = frozenset({"show_search", "show_browse", "show_status", "sync_index", "copy_path"})
# The status bar re-reads the index status this often (cheap: counts and a few stats).
STATUS_POLL_S = 10.0
# Another apus process holds the index writer lock: try again after this long.
BUSY_RETRY_S = 5.0


class ApusApp(App[None]):
    """Search, browse and read one vault; keeps its index fresh in the background."""

    # Absolute, so subclasses defined elsewhere (the tests' app factory) find it too.
    CSS_PATH = Path(__file__).with_name("apus.tcss")
    TITLE = "Apus"
    COMMANDS = App.COMMANDS | {ApusCommands}
    MODES: ClassVar[dict[str, str | type[Screen[object]]]] = {
        "search": SearchScreen,
        "browse": BrowseScreen,
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", id="help", tooltip="Every key and what it does"),
        Binding("f2", "show_search", "Search", id="show_search", tooltip="Search your notes"),
        Binding(
            "f3",
            "show_browse",
            "Browse",
            id="show_browse",
            tooltip="Browse notes by folder, recency and day",
        ),
        Binding(
            "f4",
            "show_status",
            "Status",
            id="show_status",
            tooltip="Index and embedding status, as `memory status --deep`",
        ),
        Binding(
            "ctrl+r",
            "sync_index",
            "Update index",
            id="sync_index",
            tooltip="Index notes changed since the last sync",
        ),
        Binding(
            "ctrl+p",
            "command_palette",
            "Commands",
            id="command_palette",
            show=False,
            tooltip="Search every command (index, vault, toggles…)",
        ),
        Binding(
            "ctrl+y",
            "copy_path",
            "Copy path",
            id="copy_path",
            show=False,
            tooltip="Copy the full path of the selected note",
        ),
        Binding(
            "ctrl+q",
            "quit",
            "Quit",
            id="quit",
            priority=True,
            tooltip="Stop background work and quit",
        ),
    ]

    # Search timings in the query row; snapshot tests turn them off (they vary run to run).
    show_timings: ClassVar[bool] = True

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
                isinstance(message, ApusApp.IndexProgress)
                and message.progress.phase == self.progress.phase
            )

    @dataclass
    class StatusLoaded(Message):
        status: IndexStatus

    @dataclass
    class NotesChanged(Message):
        paths: frozenset[Path]

    def __init__(
        self,
        app_ctx: AppContext,
        *,
        setup: bool = False,
        wizard: WizardOptions | None = None,
        watch: bool | None = None,
    ) -> None:
        super().__init__()
        self.app_ctx = app_ctx
        self.start_with_setup = setup
        self.wizard_options = wizard
        self.watch_override = watch
        self._searcher: Searcher | None = None
        self._resolution: ProviderResolution | None = None
        self._searcher_lock = threading.Lock()
        self._services = False
        self._queued_sync: bool | None = None  # None: nothing queued; else the force flag
        self._phase = ""
        self._mmr: bool | None = None
        self._recency: bool | None = None
        self._embeddings: dict[str, object] | None = None
        self._status_at = 0.0
        self._evidence: VectorEvidence | None = None
        self._embed_warning = ""

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
                self._searcher = open_searcher(self.settings, resolution=self._provider_locked())
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

    def search_options(self) -> SearchOptions:
        hybrid = self.settings.search.query.hybrid
        return SearchOptions(
            mode="hybrid",
            mmr=hybrid.mmr.enabled if self._mmr is None else self._mmr,
            recency=hybrid.temporal_decay.enabled if self._recency is None else self._recency,
        )

    def load_status(self, *, deep: bool) -> IndexStatus:
        return index_status(self.settings, deep=deep)

    def note_vector_leg(self, report: LegReport) -> None:
        """A hybrid search just showed whether embeddings answer; the status bar follows."""
        self._evidence = VectorEvidence(report, time.monotonic())
        self._show_provider()

    def _show_provider(self) -> None:
        self.provider = provider_view(self._embeddings, self._status_at, self._evidence)

    # -- start and stop ------------------------------------------------------------------------

    def on_mount(self) -> None:
        settings = self.settings
        self._apply_keymap(settings)
        if settings.tui.theme in self.available_themes:
            self.theme = settings.tui.theme
        else:
            self.notify(f"Unknown theme {settings.tui.theme!r} in tui.theme.", severity="warning")
        if self.start_with_setup or not settings.vault:
            self.push_screen(SetupScreen(settings, self._wizard_options()), self._setup_closed)
        else:
            self._open_vault()

    def _apply_keymap(self, settings: Settings) -> None:
        keymap = dict(settings.tui.keys)
        known = {
            binding.id
            for _title, bindings in help_sections()
            for binding in bindings
            if isinstance(binding, Binding) and binding.id
        }
        unknown = sorted(set(keymap) - known)
        if unknown:
            self.notify(
                f"Unknown key ids in tui.keys: {', '.join(unknown)} (F1 lists the ids).",
                severity="warning",
            )
        self.set_keymap({key: value for key, value in keymap.items() if key in known})

    def _wizard_options(self) -> WizardOptions:
        return self.wizard_options or WizardOptions(
            config_file=self.config_file, detect_hardware=detect_hardware
        )

    def _open_vault(self) -> None:
        if not self._services:
            self._start_services()
        self.switch_mode("search")

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
        self.set_interval(STATUS_POLL_S, self.refresh_status, name="status-poll")

    def _stop_services(self) -> None:
        """Cancel background work (the domain sees the workers' cancel events) and close."""
        for group in ("sync", "watch", "status"):
            self.workers.cancel_group(self, group)
        self._queued_sync = None
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

    async def action_quit(self) -> None:
        self._stop_services()
        self.exit()

    def on_unmount(self) -> None:
        self._stop_services()

    # -- setup and vault switching -----------------------------------------------------------

    def apply_setup(self, choices: SetupChoices) -> None:
        """The wizard saved its choices: reopen everything on the chosen vault and index it."""
        self._use_vault(choices.vault)

    def _setup_closed(self, choices: SetupChoices | None) -> None:
        if choices is None and not self.app_ctx.settings().vault:
            self.exit()
            return
        self._open_vault()

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

    def action_switch_vault(self) -> None:
        def chosen(path: Path | None) -> None:
            if path is None or path == self.vault:
                return
            try:
                update_config_file({"vault": str(path)}, config_file=self.config_file)
            except Exception as exc:  # a hand-broken config.toml must not stop the switch
                self.notify(error_text(exc), title="Not saved as default", severity="warning")
            self._use_vault(path)
            self.notify(f"Now searching {home_relative(path)}.", title="Vault switched")

        self.push_screen(FolderPickerScreen(str(self.vault)), chosen)

    def action_setup(self) -> None:
        self.push_screen(SetupScreen(self.settings, self._wizard_options()), self._setup_closed)

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
    def _sync(self, force: bool) -> SyncReport:
        worker = get_current_worker()
        return sync_index(
            self.settings,
            resolution=self.embedding_provider(),
            force=force,
            cancel=worker.cancelled_event,
            progress=lambda event: self.post_message(self.IndexProgress(event)),
        )

    def on_apus_app_index_progress(self, message: IndexProgress) -> None:
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
        self.request_sync(force=True)
        self.notify("Computing embeddings again; keyword search keeps working.", timeout=4)

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

    def on_apus_app_notes_changed(self, _message: NotesChanged) -> None:
        if self._services:
            self.request_sync()

    @work(thread=True, exclusive=True, group="status", exit_on_error=False)
    def refresh_status(self) -> None:
        self.post_message(self.StatusLoaded(self.load_status(deep=False)))

    def on_apus_app_status_loaded(self, message: StatusLoaded) -> None:
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

    # -- notes ---------------------------------------------------------------------------------

    def on_open_in_reader(self, message: OpenInReader) -> None:
        self.push_screen(
            ReaderScreen(self.vault, message.rel_path, message.start_line, message.end_line)
        )

    def on_open_in_editor(self, message: OpenInEditor) -> None:
        self.edit_file(note_path(self.vault, message.rel_path), message.line)
        self.request_sync()

    def edit_file(self, path: Path, line: int = 1) -> None:
        try:
            argv = editor_command(path, line)
        except NoEditorError as exc:
            self.notify(str(exc), title="No editor", severity="warning")
            return
        failure: OSError | None = None
        try:
            with self.suspend():
                # Caught inside: an exception leaving suspend() would skip the resume and
                # leave the terminal without the app.
                try:
                    subprocess.run(argv, check=False)
                except OSError as exc:
                    failure = exc
        except SuspendNotSupported:
            self.notify("This terminal cannot hand over to an editor.", severity="warning")
        if failure is not None:
            self.notify(f"Could not start {argv[0]}: {failure}", title="Editor", severity="error")

    def selected_path(self, screen: Screen[object] | None = None) -> str | None:
        """The vault-relative path of the note the user is looking at, if any."""
        screen = screen or self.screen
        if isinstance(screen, SearchScreen | BrowseScreen | ReaderScreen):
            return screen.selected_path()
        return None

    def action_copy_path(self) -> None:
        rel_path = self.selected_path()
        if rel_path is None:
            self.notify("Select a note first.", severity="warning", timeout=2)
            return
        full = str(note_path(self.vault, rel_path))
        self.copy_to_clipboard(full)
        self.notify(full, title="Path copied", timeout=3)

    def action_edit_selected(self) -> None:
        rel_path = self.selected_path()
        if rel_path is not None:
            self.post_message(OpenInEditor(rel_path))

    def action_open_config(self) -> None:
        file = self.config_file
        if not file.is_file():
            update_config_file({}, config_file=file)
        self.edit_file(file)

    # -- screens and toggles -------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Vault actions are hidden until a vault is open and while the wizard is showing."""
        if action in _VAULT_ACTIONS:
            return self._services and not isinstance(self.screen, SetupScreen)
        return True

    def action_show_search(self) -> None:
        if self._services:
            self.switch_mode("search")

    def action_show_browse(self) -> None:
        if self._services:
            self.switch_mode("browse")

    def action_show_status(self) -> None:
        if self._services and not isinstance(self.screen, StatusScreen):
            self.push_screen(StatusScreen())

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            keymap = dict(self.settings.tui.keys)
            self.push_screen(HelpScreen(help_sections(), keymap, str(self.config_file)))

    def action_toggle_mmr(self) -> None:
        self._mmr = not self.search_options().mmr
        self.notify(f"Diversity (MMR) {'on' if self._mmr else 'off'}.", timeout=2)
        self.results_generation += 1

    def action_toggle_recency(self) -> None:
        self._recency = not self.search_options().recency
        self.notify(f"Recency boost {'on' if self._recency else 'off'}.", timeout=2)
        self.results_generation += 1


def help_sections() -> HelpSections:
    """Every binding, grouped as the help screen shows them."""
    return [
        ("Everywhere", ApusApp.BINDINGS),
        ("Search", [*SearchScreen.BINDINGS, *ResultList.BINDINGS]),
        ("Reading", [*NotePreview.BINDINGS, *ReaderScreen.BINDINGS]),
        ("Browse", BrowseScreen.BINDINGS),
        ("Status", StatusScreen.BINDINGS),
        ("Setup", SetupScreen.BINDINGS),
    ]


def run_app(app_ctx: AppContext) -> None:
    """`apus`: open the app on the configured vault, or the setup wizard when there is none."""
    settings = app_ctx.settings()
    ApusApp(app_ctx, setup=not settings.vault).run()


def run_setup(app_ctx: AppContext) -> None:
    """`apus setup`: the wizard, then the app on the chosen vault."""
    app_ctx.settings()
    ApusApp(app_ctx, setup=True).run()
