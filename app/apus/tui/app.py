"""The Apus app: screens, key bindings, commands, and opening notes."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import ClassVar

from textual.app import App, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.screen import Screen

from apus.cli.context import AppContext
from apus.config import Settings, update_config_file
from apus.first_run import SetupChoices, detect_hardware
from apus.search.engine import SearchOptions
from apus.tui.commands import ApusCommands
from apus.tui.editor import NoEditorError, editor_command
from apus.tui.errors import error_text
from apus.tui.format import home_relative
from apus.tui.messages import OpenInEditor, OpenInReader
from apus.tui.notes import note_path
from apus.tui.screens.browse import BrowseScreen
from apus.tui.screens.folder_picker import FolderPickerScreen
from apus.tui.screens.help import HelpScreen, HelpSections
from apus.tui.screens.reader import ReaderScreen
from apus.tui.screens.search import SearchScreen
from apus.tui.screens.status import StatusScreen
from apus.tui.screens.wizard import SetupScreen, WizardOptions
from apus.tui.services import AppServices
from apus.tui.widgets.preview import NotePreview
from apus.tui.widgets.results import ResultList

_VAULT_ACTIONS = frozenset({"show_search", "show_browse", "show_status", "sync_index", "copy_path"})


class ApusApp(AppServices):
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

    def __init__(
        self,
        app_ctx: AppContext,
        *,
        setup: bool = False,
        wizard: WizardOptions | None = None,
        watch: bool | None = None,
    ) -> None:
        super().__init__(app_ctx, watch=watch)
        self.start_with_setup = setup
        self.wizard_options = wizard
        self._mmr: bool | None = None
        self._recency: bool | None = None

    def search_options(self) -> SearchOptions:
        hybrid = self.settings.search.query.hybrid
        return SearchOptions(
            mode="hybrid",
            mmr=hybrid.mmr.enabled if self._mmr is None else self._mmr,
            recency=hybrid.temporal_decay.enabled if self._recency is None else self._recency,
        )

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
        self.push_screen(SetupScreen(self.settings, self._wizard_options()), self._setup_closed)

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
