"""The setup wizard: notes folder, embedding provider, model download, first index.

Each step is a widget (`widgets/setup/`) that says whether it is `ready` and `contribute`s
its part of the choices; this screen walks through them, tests the provider with one
embedding, saves the choices, and shows the first index.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Button, ContentSwitcher, Footer, Static
from textual.worker import Worker, WorkerState

from apus.clients.catalog import Places
from apus.config import Settings
from apus.first_run import Hardware, ProviderChoice, SetupChoices, save_choices, try_provider
from apus.indexing.sync import SyncReport
from apus.tui.errors import error_text, notify_worker_error
from apus.tui.format import home_relative
from apus.tui.state import BackgroundWork
from apus.tui.widgets.setup.folder import FolderStep
from apus.tui.widgets.setup.index import IndexStep
from apus.tui.widgets.setup.model import ModelStep
from apus.tui.widgets.setup.provider import ProviderStep
from apus.tui.widgets.setup.step import SetupStep

if TYPE_CHECKING:
    from apus.embed.base import ProbeResult
    from apus.embed.local.catalog import ModelManifest


@dataclass(frozen=True)
class WizardOptions:
    """What the wizard needs besides the current settings; tests swap in fakes."""

    config_file: Path
    detect_hardware: Callable[[], Hardware]
    catalog: Mapping[str, ModelManifest] | None = None
    folder_root: Path | None = None
    places: Places | None = None  # where agent clients are looked for (None: this user's)


class SetupScreen(Screen[SetupChoices | None]):
    """Four steps; the choices are saved to config.toml before the first index starts, and
    handed to `apply_setup`, which opens the vault."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="setup_back", tooltip="Previous step, or leave setup"),
        Binding("ctrl+n", "next", "Next", id="setup_next", tooltip="Go on to the next step"),
    ]

    DownloadProgress = ModelStep.DownloadProgress  # what a download reports, by this name too

    # The app's indexing, bound (`data_bind`) by the app: the last step shows it.
    background: reactive[BackgroundWork | None] = reactive(None, init=False)
    sync_report: reactive[SyncReport | None] = reactive(None, init=False)

    def __init__(
        self,
        settings: Settings | None,
        options: WizardOptions,
        apply_setup: Callable[[SetupChoices], None],
    ) -> None:
        super().__init__()
        self.initial = settings
        self.options = options
        self.apply_setup = apply_setup
        self.folder_step = FolderStep(settings.vault if settings else "", options.folder_root)
        self.provider_step = ProviderStep(settings, options.detect_hardware)
        self.model_step = ModelStep(options.catalog)
        self.index_step = IndexStep()
        self.steps: tuple[SetupStep, ...] = (
            self.folder_step,
            self.provider_step,
            self.model_step,
            self.index_step,
        )
        self.current: SetupStep = self.folder_step
        self.choices: SetupChoices | None = None
        self.tested = ""  # what the test found, shown once the choices are saved

    @property
    def step(self) -> str:
        return self.current.key

    @property
    def provider(self) -> ProviderChoice:
        return self.provider_step.provider

    # -- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("Set up Apus", id="setup-title")
        yield Static("", id="setup-step")
        with ContentSwitcher(initial="step-folder", id="setup-steps"):
            yield from self.steps
        with Horizontal(id="setup-buttons"):
            yield Button("Back", id="back")
            yield Button("Next", id="next", variant="primary", disabled=True)
        yield Footer()

    def on_mount(self) -> None:
        self._show_step()

    def _show_step(self) -> None:
        step = self.current
        number = self.steps.index(step) + 1
        self.query_one("#setup-step", Static).update(
            f"Step {number} of {len(self.steps)} · {step.heading}"
        )
        self.query_one(ContentSwitcher).current = step.id
        self.query_one("#back", Button).display = step not in (self.folder_step, self.index_step)
        self._update_next()
        step.enter()

    def _update_next(self) -> None:
        button = self.query_one("#next", Button)
        button.disabled = not self.current.ready or self.current.testing
        button.label = "Start searching" if self.current is self.index_step else "Next"

    @on(SetupStep.Changed)
    def _step_changed(self, event: SetupStep.Changed) -> None:
        if event.control is not self.current:
            return
        self._update_next()
        if event.focus_next:
            self.query_one("#next", Button).focus()
        if event.advance:
            self.action_next()

    def _choices(self) -> SetupChoices:
        """Every step's part, in order (the model step adds to a local provider only)."""
        choices = SetupChoices(Path(), "none")
        for step in self.steps:
            choices = step.contribute(choices)
        return choices

    # -- navigation ----------------------------------------------------------------------

    @on(Button.Pressed, "#next")
    def action_next(self) -> None:
        if self.query_one("#next", Button).disabled:
            return
        step = self.current
        if step is self.folder_step:
            self._go(self.provider_step)
        elif step is self.provider_step:
            if self.provider.name == "local":
                self._go(self.model_step)
            elif self.provider.remote:
                self._start_test(self._choices())
            else:
                self._finish(self._choices())
        elif step is self.model_step:
            self._start_test(self._choices())
        elif step is self.index_step:
            self.dismiss(self.choices)

    @on(Button.Pressed, "#back")
    def action_back(self) -> None:
        step = self.current
        if step is self.folder_step:
            self.dismiss(None)
            return
        if step is self.index_step:
            return  # the choices are saved; "Start searching" leaves the wizard
        self.model_step.leave()
        self.workers.cancel_group(self, "provider-test")
        step.testing = False
        self._go(self.steps[self.steps.index(step) - 1])

    def _go(self, step: SetupStep) -> None:
        self.current = step
        self._show_step()

    @on(Button.Pressed, "#keyword-only")
    @on(Button.Pressed, "#test-keyword-only")
    def _keyword_only(self) -> None:
        self._finish(SetupChoices(self._choices().vault, "none"))

    @on(Button.Pressed, "#save-untested")
    def _save_untested(self) -> None:
        """A server that is not running yet (Ollama on a box that is off): save it anyway;
        search says it is unavailable, with the reason, until it answers."""
        self._finish(self._choices())

    # -- the test: one embedding with the chosen provider, before anything is saved -------

    def _start_test(self, choices: SetupChoices) -> None:
        step = self.current
        assert isinstance(step, ProviderStep | ModelStep)
        step.testing = True
        what = "the model on this computer" if choices.provider == "local" else self.provider.label
        step.show_test(f"Testing {what} with one embedding…")
        self._update_next()
        verified = self.model_step.model_to_test() if choices.provider == "local" else None
        self._test(choices, verified)

    @work(thread=True, exclusive=True, group="provider-test", exit_on_error=False)
    def _test(self, choices: SetupChoices, verified: Path | None) -> None:
        test_choices = replace(choices, model_path=str(verified)) if verified else choices
        base = self.initial.search if self.initial else None
        result = try_provider(test_choices, base)
        self.app.call_from_thread(self._tested, choices, result)

    def _tested(self, choices: SetupChoices, result: ProbeResult) -> None:
        step = self.current
        if not self.is_attached or not isinstance(step, ProviderStep | ModelStep):
            return
        step.testing = False
        if result.ok:
            self.tested = f" The test embedding took {result.seconds:.1f} s."
            step.show_test(
                f"✓ It works: a {result.dims}-dimensional vector in {result.seconds:.1f} s."
            )
            self._finish(choices)
            return
        failure = f"✗ The test failed: {result.error}"
        if result.fix:
            failure += f"\nFix: {result.fix}"
        step.show_failure(failure)
        self._update_next()

    # -- step 4: save and index ----------------------------------------------------------

    def _finish(self, choices: SetupChoices) -> None:
        try:
            written = save_choices(choices, config_file=self.options.config_file)
        except Exception as exc:  # a config the user broke by hand, or an unwritable folder
            self.notify(error_text(exc), title="Could not save the settings", severity="error")
            return
        self.choices = choices
        self.index_step.show_saved(f"Saved your choices to {home_relative(written)}.{self.tested}")
        self._go(self.index_step)
        self.apply_setup(choices)
        self.watch_background(self.background)
        self._find_clients()

    # -- the offer: connect the agents found here to this vault --------------------------

    @property
    def places(self) -> Places:
        return self.options.places or Places.current()

    @work(thread=True, group="clients", exit_on_error=False)
    def _find_clients(self) -> None:
        from apus.clients.connect import survey

        states = survey(self.places)
        self.app.call_from_thread(self.index_step.offer_clients, states)

    @on(Button.Pressed, ".connect-client")
    def _connect_pressed(self, event: Button.Pressed) -> None:
        if event.button.id and self.choices is not None:
            event.button.disabled = True
            self._connect(event.button.id.removeprefix("connect-"), self.choices.vault)

    @work(thread=True, group="clients", exit_on_error=False)
    def _connect(self, name: str, vault: Path) -> None:
        from apus.clients.catalog import BY_NAME
        from apus.clients.connect import connect
        from apus.clients.launch import apus_launch
        from apus.errors import ApusError
        from apus.paths import config_file

        client = BY_NAME[name]
        written = self.options.config_file
        launch = apus_launch(
            "mcp", vault=vault, config_file=None if written == config_file() else written
        )
        try:
            outcome = connect(
                client, self.places, scope="user", name="apus", entry=client.entry(launch)
            )
        except ApusError as exc:
            text, ok = f"✗ {client.label}: {exc.reason}\nFix: {exc.fix}", False
        else:
            text = (
                f"✓ {client.label}: Apus {outcome.action} in {home_relative(outcome.edit.path)}; "
            )
            text += client.reload + "."
            ok = True
        self.app.call_from_thread(self.index_step.show_connected, name, text, ok)

    def watch_background(self, work: BackgroundWork | None) -> None:
        if work is not None and self.current is self.index_step:
            self.index_step.show_work(work)

    def watch_sync_report(self, old: SyncReport | None, report: SyncReport | None) -> None:
        # The binding sets the last report again when it starts; only a new one is news.
        if report is not None and report is not old and self.current is self.index_step:
            self.index_step.show_report(report)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            notify_worker_error(self.app, event.worker)
