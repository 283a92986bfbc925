"""The Apus app: screens, key bindings, commands, and opening notes."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from textual.app import App, SuspendNotSupported, SystemCommand
from textual.binding import Binding, BindingType
from textual.reactive import Reactive, reactive
from textual.screen import Screen

from apus.config import Settings, SettingsSource, update_config_file
from apus.first_run import SetupChoices, detect_hardware
from apus.index.status import IndexStatus
from apus.indexing.request import SyncRequest
from apus.indexing.sync import SyncReport
from apus.memory import Memory
from apus.search.options import ResolvedOptions, SearchOptions
from apus.search.results import LegReport
from apus.tui.commands import apus_commands
from apus.tui.editor import NoEditorError, editor_command
from apus.tui.errors import NotifiesWorkerErrors, error_text
from apus.tui.format import home_relative
from apus.tui.live import LiveMemory, MemoryEventMessage, StatusLoaded
from apus.tui.messages import OpenInEditor, OpenInReader
from apus.tui.notes import note_path
from apus.tui.preferences import SearchPreferences
from apus.tui.screens.browse import BrowseScreen
from apus.tui.screens.conversation import ConversationScreen
from apus.tui.screens.folder_picker import FolderPickerScreen
from apus.tui.screens.help import HelpScreen, HelpSections
from apus.tui.screens.reader import ReaderScreen
from apus.tui.screens.search import SearchScreen
from apus.tui.screens.status import StatusScreen
from apus.tui.screens.with_status import StatusBarScreen
from apus.tui.screens.wizard import SetupScreen, WizardOptions
from apus.tui.state import BackgroundWork, ProviderView
from apus.tui.widgets.preview import NotePreview
from apus.tui.widgets.results import ResultList
from apus.vault import transcripts

_VAULT_ACTIONS = frozenset({"show_search", "show_browse", "show_status", "sync_index", "copy_path"})

# Any result type: Screen is invariant in it, and the app binds screens of every kind.
ScreenT = TypeVar("ScreenT", bound=Screen[Any])


class ApusApp(NotifiesWorkerErrors, App[None]):
    """Search, browse and read one vault; keeps its index fresh in the background.

    The vault's headless session (`memory`) does the work; the app shows it. Screens get
    what they need when the app makes them: the session (`live`), the search preferences,
    and the app's state below through `data_bind`.
    """

    # Absolute, so subclasses defined elsewhere (the tests' app factory) find it too.
    CSS_PATH = Path(__file__).with_name("apus.tcss")
    TITLE = "Apus"
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
    # Bumped when the index changed (searches and listings are stale), and when a ranking
    # toggle flipped (only searches are).
    index_generation: reactive[int] = reactive(0)
    ranking_generation: reactive[int] = reactive(0)
    vault_generation: reactive[int] = reactive(0)

    def __init__(
        self,
        source: SettingsSource,
        *,
        setup: bool = False,
        wizard: WizardOptions | None = None,
        watch: bool | None = None,
    ) -> None:
        super().__init__()
        self.source = source
        self._settings = source.load()
        self.live = LiveMemory(self)
        self.watch_override = watch
        self.start_with_setup = setup
        self.wizard_options = wizard
        self.preferences = SearchPreferences(show_timings=self.show_timings)
        self.add_mode("search", self._search_screen)
        self.add_mode("browse", self._browse_screen)

    # -- screens get what they need ----------------------------------------------------------

    def _bound(self, screen: ScreenT, *reactives: Reactive[Any]) -> ScreenT:
        """Bind the status bar's state (and `reactives`) of the app to a screen it makes.

        `data_bind` binds to the node whose messages are being handled; a mode screen is made
        while a key is handled by whichever widget has focus, so the app makes itself that
        node here."""
        with self._context():
            if isinstance(screen, StatusBarScreen):
                screen.data_bind(ApusApp.provider, ApusApp.counts, ApusApp.background)
            if reactives:
                screen.data_bind(*reactives)
        return screen

    def _search_screen(self) -> SearchScreen:
        return self._bound(
            SearchScreen(self.live, self.preferences),
            ApusApp.index_generation,
            ApusApp.ranking_generation,
            ApusApp.vault_generation,
        )

    def _browse_screen(self) -> BrowseScreen:
        return self._bound(
            BrowseScreen(self.live), ApusApp.index_generation, ApusApp.vault_generation
        )

    def _setup_screen(self) -> SetupScreen:
        screen = SetupScreen(self.settings, self._wizard_options(), self.apply_setup)
        return self._bound(screen, ApusApp.background, ApusApp.sync_report)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from apus_commands(self, self.selected_path(screen))

    @property
    def include_conversations(self) -> bool:
        return self.preferences.include_conversations

    # -- the session ---------------------------------------------------------------------------

    @property
    def memory(self) -> Memory:
        """The open vault's session (only while a vault is open)."""
        if self.live.memory is None:
            raise RuntimeError("no vault is open")
        return self.live.memory

    @property
    def vault_open(self) -> bool:
        return self.live.memory is not None

    @property
    def settings(self) -> Settings:
        return self.live.memory.settings if self.live.memory is not None else self._settings

    @property
    def vault(self) -> Path:
        return self.settings.vault_path()

    @property
    def config_file(self) -> Path:
        return self.source.file

    def load_status(self, *, deep: bool) -> IndexStatus:
        return self.memory.status(deep=deep)

    def note_vector_leg(self, report: LegReport) -> None:
        self.live.note_vector_leg(report)

    def on_live_memory_event_message(self, message: MemoryEventMessage) -> None:
        self.live.on_event(message.event)

    def on_live_status_loaded(self, message: StatusLoaded) -> None:
        self.live.on_status(message.status)

    def search_options(self) -> SearchOptions:
        """What the toggles ask for; a toggle never touched leaves its option to config."""
        return self.preferences.options()

    def resolved_search_options(self) -> ResolvedOptions:
        """The options a search runs with now (what the toggles show)."""
        return self.search_options().resolve(self.settings.search.query)

    # -- start and stop ------------------------------------------------------------------------

    def on_mount(self) -> None:
        settings = self.settings
        self._apply_keymap(settings)
        if settings.tui.theme in self.available_themes:
            self.theme = settings.tui.theme
        else:
            self.notify(f"Unknown theme {settings.tui.theme!r} in tui.theme.", severity="warning")
        if self.start_with_setup or not settings.vault:
            self.push_screen(self._setup_screen(), self._setup_closed)
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
        if not self.vault_open:
            self._use_source(self.source)
        self.switch_mode("search")

    def _use_source(self, source: SettingsSource) -> None:
        self.source = source
        self._settings = source.load()
        self.counts = ""
        self.live.open(source, watch=self.watch_override)
        self.refresh_bindings()

    async def action_quit(self) -> None:
        self.live.close()
        self.exit()

    def on_unmount(self) -> None:
        self.live.close()

    # -- setup and vault switching -----------------------------------------------------------

    def apply_setup(self, choices: SetupChoices) -> None:
        """The wizard saved its choices: reopen everything on the chosen vault and index it."""
        self._use_vault(choices.vault)

    def _use_vault(self, vault: Path) -> None:
        self._use_source(self.source.with_vault(vault))
        self.vault_generation += 1

    def _setup_closed(self, choices: SetupChoices | None) -> None:
        if choices is None and not self.settings.vault:
            self.exit()
            return
        self._open_vault()

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

        self.push_screen(FolderPickerScreen(home_relative(self.vault)), chosen)

    def action_setup(self) -> None:
        self.push_screen(self._setup_screen(), self._setup_closed)

    # -- notes ---------------------------------------------------------------------------------

    def on_open_in_reader(self, message: OpenInReader) -> None:
        session_key = transcripts.session_key_of(message.rel_path)
        if session_key is not None:
            self.push_screen(
                ConversationScreen(self.live, session_key, message.start_line, message.end_line)
            )
            return
        self.push_screen(
            ReaderScreen(self.vault, message.rel_path, message.start_line, message.end_line)
        )

    def on_open_in_editor(self, message: OpenInEditor) -> None:
        if transcripts.session_key_of(message.rel_path) is not None:
            self.notify("Conversations are read here, not edited.", timeout=3)
            return
        self.edit_file(note_path(self.vault, message.rel_path), message.line)
        self.live.request_sync()

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
            return self.vault_open and not isinstance(self.screen, SetupScreen)
        return True

    def action_show_search(self) -> None:
        if self.vault_open:
            self.switch_mode("search")

    def action_show_browse(self) -> None:
        if self.vault_open:
            self.switch_mode("browse")

    def action_show_status(self) -> None:
        if self.vault_open and not isinstance(self.screen, StatusScreen):
            self.push_screen(self._bound(StatusScreen(self.load_status)))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            keymap = dict(self.settings.tui.keys)
            self.push_screen(HelpScreen(help_sections(), keymap, str(self.config_file)))

    def action_toggle_mmr(self) -> None:
        mmr = self.preferences.mmr = not self.resolved_search_options().mmr
        self.notify(f"Diversity (MMR) {'on' if mmr else 'off'}.", timeout=2)
        self.ranking_generation += 1

    def action_toggle_conversations(self) -> None:
        """Search agent transcripts too, or notes only. Transcripts must be indexed, and the
        app (which names no agent) sees them only under `tools.sessions.visibility = "all"`."""
        settings = self.settings
        if not self.include_conversations and not transcripts.enabled(settings.search):
            self.notify(
                "Conversations are not indexed. Set memory.search.experimental.sessionMemory "
                '= true and add "sessions" to memory.search.sources (Ctrl+P: open config).',
                severity="warning",
                timeout=6,
            )
            return
        visibility = settings.tools.sessions.visibility
        if not self.include_conversations and visibility != "all":
            self.notify(
                f"tools.sessions.visibility is {visibility!r}: conversations are shown to the "
                "agents they belong to, not in the app.",
                severity="warning",
                timeout=6,
            )
            return
        self.preferences.include_conversations = not self.include_conversations
        state = "included" if self.include_conversations else "left out"
        self.notify(f"Conversations {state}.", timeout=2)
        self.ranking_generation += 1

    def action_toggle_recency(self) -> None:
        recency = self.preferences.recency = not self.resolved_search_options().recency
        self.notify(f"Recency boost {'on' if recency else 'off'}.", timeout=2)
        self.ranking_generation += 1

    # -- indexing ------------------------------------------------------------------------------

    def action_sync_index(self) -> None:
        self.live.request_sync()
        self.notify("Looking for changed notes…", timeout=2)

    def action_rebuild_index(self) -> None:
        self.live.request_sync(SyncRequest(force=True))
        self.notify("Rebuilding the index; keyword search keeps working meanwhile.", timeout=4)

    def action_reembed(self) -> None:
        if self.live.syncing:
            self.notify("The index is being updated; re-embed when it has finished.")
            return
        self.live.request_sync(SyncRequest(reembed=True))
        self.notify(
            "Rebuilding vectors for the current model; keyword search keeps working.", timeout=4
        )


def help_sections() -> HelpSections:
    """Every binding, grouped as the help screen shows them."""
    return [
        ("Everywhere", ApusApp.BINDINGS),
        ("Search", [*SearchScreen.BINDINGS, *ResultList.BINDINGS]),
        ("Reading", [*NotePreview.BINDINGS, *ReaderScreen.BINDINGS, *ConversationScreen.BINDINGS]),
        ("Browse", BrowseScreen.BINDINGS),
        ("Status", StatusScreen.BINDINGS),
        ("Setup", SetupScreen.BINDINGS),
    ]


def run_app(source: SettingsSource) -> None:
    """`apus`: open the app on the configured vault, or the setup wizard when there is none."""
    settings = source.load()
    ApusApp(source, setup=not settings.vault).run()


def run_setup(source: SettingsSource) -> None:
    """`apus setup`: the wizard, then the app on the chosen vault."""
    source.load()  # a broken config.toml is reported before the screen opens
    ApusApp(source, setup=True).run()
