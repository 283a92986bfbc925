"""The setup wizard: notes folder, embedding provider, model download, first index."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import (
    Button,
    ContentSwitcher,
    Footer,
    Input,
    Label,
    ProgressBar,
    RadioButton,
    RadioSet,
    Static,
)
from textual.worker import Worker, WorkerState, get_current_worker

from apus.config import Settings
from apus.first_run import (
    PROVIDER_CHOICES,
    FolderCheck,
    Hardware,
    ProviderChoice,
    SetupChoices,
    check_gguf,
    default_model,
    download_model,
    key_in_environment,
    model_ready,
    save_choices,
    try_provider,
)
from apus.index.sync import SyncReport
from apus.tui.errors import error_text, notify_worker_error
from apus.tui.format import eta_text, home_relative
from apus.tui.state import BackgroundWork
from apus.tui.widgets.folder_chooser import FolderChooser
from apus.units import human_size

if TYPE_CHECKING:
    from apus.embed.base import ProbeResult
    from apus.embed.local.catalog import ModelManifest

STEPS = ("folder", "provider", "model", "index")
_TITLES = {
    "folder": "Your notes folder",
    "provider": "How Apus understands meaning",
    "model": "The embedding model",
    "index": "Indexing your notes",
}


@dataclass(frozen=True)
class WizardOptions:
    """What the wizard needs besides the current settings; tests swap in fakes."""

    config_file: Path
    detect_hardware: Callable[[], Hardware]
    catalog: Mapping[str, ModelManifest] | None = None
    folder_root: Path | None = None


class _Details(VerticalScroll, can_focus=False):
    """The chosen provider's fields: Tab goes from the list straight to them."""


class SetupScreen(Screen[SetupChoices | None]):
    """Four steps; the choices are saved to config.toml before the first index starts."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "Back", id="setup_back", tooltip="Previous step, or leave setup"),
        Binding("ctrl+n", "next", "Next", id="setup_next", tooltip="Go on to the next step"),
    ]

    @dataclass
    class DownloadProgress(Message, bubble=False):
        done: int
        total: int

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, SetupScreen.DownloadProgress)

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
        self.step = "folder"
        self.folder: FolderCheck | None = None
        self.provider: ProviderChoice = _initial_provider(settings)
        self.manifest: ModelManifest | None = None
        self.model_ok = False
        self.gguf_path = ""
        self.choices: SetupChoices | None = None
        self.keyword_ready = False
        self.testing = False  # one request to the chosen provider is under way
        self.tested = ""  # what the test found, shown once the choices are saved

    # -- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("Set up Apus", id="setup-title")
        yield Static("", id="setup-step")
        with ContentSwitcher(initial="step-folder", id="setup-steps"):
            with Vertical(id="step-folder"):
                yield Static(
                    "Apus searches a folder of Markdown notes: an Obsidian vault, a journal, a "
                    "docs tree. It only reads your notes; it never changes them.",
                    classes="intro",
                )
                yield FolderChooser(
                    self.initial.vault if self.initial else "",
                    root=self.options.folder_root,
                    id="folder-chooser",
                )
            with Vertical(id="step-provider"):
                yield Static(
                    "Keyword search works right away. To also find notes by meaning, Apus "
                    "turns each passage into an embedding. Where should those come from?",
                    classes="intro",
                )
                with Horizontal(id="provider-columns"):
                    with RadioSet(id="provider-choice"):
                        for choice in PROVIDER_CHOICES:
                            yield RadioButton(choice.label, value=choice == self.provider)
                    with _Details(id="provider-details"):
                        yield from self._compose_provider_details()
            with Vertical(id="step-model"):
                yield Static("", id="model-info", markup=False)
                yield ProgressBar(id="download-bar", show_eta=False)
                yield Static("", id="download-status", markup=False)
                yield Static("", id="model-test", markup=False)
                with Horizontal(classes="buttons"):
                    yield Button("Download", id="download", variant="primary")
                    yield Button("Cancel download", id="cancel-download", disabled=True)
                with Vertical(id="offline"):
                    yield Static("", id="offline-message", markup=False)
                    with Horizontal(classes="buttons"):
                        yield Button("Continue with keyword search only", id="keyword-only")
                    yield Input(placeholder="…or the path of a .gguf model you have", id="gguf")
                    yield Static("", id="gguf-verdict", markup=False)
            with Vertical(id="step-index"):
                yield Static("", id="index-saved", markup=False)
                yield Static("Starting…", id="index-phase", markup=False)
                yield ProgressBar(id="index-bar", show_eta=False)
                yield Static("", id="index-ready", markup=False)
        with Horizontal(id="setup-buttons"):
            yield Button("Back", id="back")
            yield Button("Next", id="next", variant="primary", disabled=True)
        yield Footer()

    def _compose_provider_details(self) -> ComposeResult:
        yield Static("", id="provider-description", markup=False)
        yield Static("", id="provider-warning", markup=False)
        with Vertical(id="remote-fields"):
            yield Label("Server URL", id="remote-url-label", classes="field-label")
            yield Input(placeholder="http://host:port", id="remote-url")
            yield Label("Model name on that server", id="remote-model-label", classes="field-label")
            yield Input(placeholder="as the server lists it", id="remote-model")
        with Vertical(id="key-fields"):
            yield Static("", id="key-env", markup=False)
            with RadioSet(id="key-source"):
                yield RadioButton("Use the key from the environment", id="key-from-env")
                yield RadioButton(
                    "Paste a key (kept in config.toml, readable only by you)", id="key-pasted"
                )
            yield Input(placeholder="paste the API key here", password=True, id="api-key")
        yield Static("", id="provider-test", markup=False)
        with Horizontal(id="test-failed", classes="buttons"):
            yield Button("Continue with keyword search only", id="test-keyword-only")
            yield Button("Save it untested", id="save-untested")
        yield Static("Checking this computer for a GPU…", id="hardware", markup=False)

    def on_mount(self) -> None:
        self.query_one("#test-failed").display = False
        self.query_one("#model-test").display = False
        self.query_one("#offline").display = False
        self.query_one("#download-bar", ProgressBar).display = False
        self.query_one("#index-bar", ProgressBar).display = False
        self._show_provider(self.provider)
        self._show_step()
        self._detect()

    def _show_step(self) -> None:
        number = STEPS.index(self.step) + 1
        self.query_one("#setup-step", Static).update(
            f"Step {number} of {len(STEPS)} · {_TITLES[self.step]}"
        )
        self.query_one(ContentSwitcher).current = f"step-{self.step}"
        self.query_one("#back", Button).display = self.step not in ("folder", "index")
        self._update_next()
        if self.step == "folder":
            self.query_one("#folder-input", Input).focus()
        elif self.step == "provider":
            self.query_one(RadioSet).focus()
        elif self.step == "model":
            self.query_one("#download", Button).focus()

    def _update_next(self) -> None:
        button = self.query_one("#next", Button)
        ready = {
            "folder": self.folder is not None and self.folder.usable,
            "provider": self._provider_ready(),
            "model": self.model_ok or bool(self.gguf_path),
            "index": self.keyword_ready,
        }[self.step]
        button.disabled = not ready or self.testing
        button.label = "Start searching" if self.step == "index" else "Next"

    def _provider_ready(self) -> bool:
        choice = self.provider
        if not choice.remote:
            return True
        url = self.query_one("#remote-url", Input).value.strip()
        if not choice.hosted:
            return bool(url)
        model = self.query_one("#remote-model", Input).value.strip()
        return bool(model) and (not self._pasting_key() or bool(self._pasted_key()))

    # -- navigation ----------------------------------------------------------------------

    @on(Button.Pressed, "#next")
    def action_next(self) -> None:
        if self.query_one("#next", Button).disabled:
            return
        if self.step == "folder":
            self.step = "provider"
        elif self.step == "provider":
            if self.provider.name == "local":
                self.step = "model"
                self._enter_model_step()
            elif self.provider.remote:
                self._start_test(self._choices())
                return
            else:
                self._finish(self._choices())
                return
        elif self.step == "model":
            self._start_test(self._choices())
            return
        elif self.step == "index":
            self.dismiss(self.choices)
            return
        self._show_step()

    @on(Button.Pressed, "#back")
    def action_back(self) -> None:
        if self.step == "folder":
            self.dismiss(None)
            return
        if self.step == "index":
            return  # the choices are saved; "Start searching" leaves the wizard
        self.workers.cancel_group(self, "download")
        self.workers.cancel_group(self, "provider-test")
        self.testing = False
        self.step = STEPS[STEPS.index(self.step) - 1]
        self._show_step()

    # -- step 1: folder ------------------------------------------------------------------

    @on(FolderChooser.Checked)
    def _folder_checked(self, event: FolderChooser.Checked) -> None:
        self.folder = event.check
        self._update_next()
        if event.submitted and event.check.usable:
            self.action_next()

    # -- step 2: provider ----------------------------------------------------------------

    @on(RadioSet.Changed, "#provider-choice")
    def _provider_changed(self, event: RadioSet.Changed) -> None:
        self._show_provider(PROVIDER_CHOICES[event.index])

    def _show_provider(self, choice: ProviderChoice) -> None:
        self.provider = choice
        self.query_one("#provider-description", Static).update(choice.description)
        warning = self.query_one("#provider-warning", Static)
        warning.update(f"⚠ {choice.warning}" if choice.warning else "")
        warning.display = bool(choice.warning)
        self.query_one("#remote-fields").display = choice.remote
        self.query_one("#remote-url-label", Label).update(
            "Base URL (change it only for a proxy)" if choice.hosted else "Server URL"
        )
        self.query_one("#remote-model-label", Label).update(
            f"Model ({choice.default_model} unless you choose another)"
            if choice.hosted
            else "Model name on that server"
        )
        self._show_key_fields(choice)
        self._show_test(None)
        if choice.remote:
            url = self.query_one("#remote-url", Input)
            model = self.query_one("#remote-model", Input)
            known = {c.default_url for c in PROVIDER_CHOICES}
            if not url.value or url.value in known:
                url.value = choice.default_url
            known_models = {c.default_model for c in PROVIDER_CHOICES}
            if not model.value or model.value in known_models:
                model.value = choice.default_model
        self._update_next()

    def _show_key_fields(self, choice: ProviderChoice) -> None:
        """Where the key comes from: the environment (which variable, and whether it is set)
        or pasted here. Bedrock signs with the AWS credential chain instead."""
        self.query_one("#key-fields").display = choice.hosted
        if not choice.hosted:
            return
        found = key_in_environment(choice)
        self.query_one("#key-env", Static).update(
            found.summary
            or "Signed with your AWS credentials (environment, profile or SSO); no key here."
        )
        takes_key = bool(choice.key_env)
        self.query_one("#key-source").display = takes_key
        from_env = self.query_one("#key-from-env", RadioButton)
        from_env.label = f"Use the key in {found.found or choice.key_env[0]}" if takes_key else ""
        with self.prevent(RadioSet.Changed):
            if found.found or not takes_key:
                from_env.value = True
            else:
                self.query_one("#key-pasted", RadioButton).value = True
        self.query_one("#api-key").display = takes_key and self._pasting_key()

    def _pasting_key(self) -> bool:
        return bool(self.provider.key_env) and self.query_one("#key-pasted", RadioButton).value

    def _pasted_key(self) -> str:
        return self.query_one("#api-key", Input).value.strip()

    @on(RadioSet.Changed, "#key-source")
    def _key_source_changed(self) -> None:
        pasting = self._pasting_key()
        self.query_one("#api-key").display = pasting
        if pasting:
            self.query_one("#api-key").focus()
        self._show_test(None)
        self._update_next()

    @on(Input.Changed, "#remote-url")
    @on(Input.Changed, "#remote-model")
    @on(Input.Changed, "#api-key")
    def _field_changed(self) -> None:
        if not self.testing:
            self._show_test(None)  # a verdict on other values no longer applies
        self._update_next()

    @work(thread=True, exclusive=True, group="hardware", exit_on_error=False)
    def _detect(self) -> None:
        hardware = self.options.detect_hardware()
        self.app.call_from_thread(self._show_hardware, hardware)

    def _show_hardware(self, hardware: Hardware) -> None:
        if self.is_attached:
            self.query_one("#hardware", Static).update(f"This computer: {hardware.summary}")

    # -- step 3: model -------------------------------------------------------------------

    def _enter_model_step(self) -> None:
        if self.manifest is None:
            self.manifest = default_model(self.options.catalog)
        manifest = self.manifest
        self.query_one("#model-info", Static).update(
            f"{manifest.name}: {manifest.description}\n"
            f"{human_size(manifest.size)} from {manifest.repo}, checked against its published "
            "sha256 before first use. An interrupted download continues where it stopped."
        )
        self._check_model(manifest)

    @work(exclusive=True, group="model-check", exit_on_error=False)
    async def _check_model(self, manifest: ModelManifest) -> None:
        status = self.query_one("#download-status", Static)
        status.update("Looking for an earlier download…")
        ready = await asyncio.to_thread(model_ready, manifest)
        self.model_ok = ready
        status.update("Already downloaded and verified." if ready else "Not downloaded yet.")
        self.query_one("#download", Button).display = not ready
        self._update_next()
        if ready:
            self.query_one("#next", Button).focus()

    @on(Button.Pressed, "#download")
    def _start_download(self) -> None:
        if self.manifest is None:
            return
        self.query_one("#offline").display = False
        self.query_one("#download", Button).disabled = True
        self.query_one("#cancel-download", Button).disabled = False
        bar = self.query_one("#download-bar", ProgressBar)
        bar.display = True
        bar.update(total=self.manifest.size)
        self.query_one("#download-status", Static).update("Connecting…")
        self._download(self.manifest)

    @on(Button.Pressed, "#cancel-download")
    def _cancel_download(self) -> None:
        self.workers.cancel_group(self, "download")

    @work(thread=True, exclusive=True, group="download", exit_on_error=False)
    def _download(self, manifest: ModelManifest) -> Path:
        worker = get_current_worker()
        return download_model(
            manifest,
            progress=lambda done, total: self.post_message(self.DownloadProgress(done, total)),
            cancel=worker.cancelled_event,
        )

    def on_setup_screen_download_progress(self, message: DownloadProgress) -> None:
        bar = self.query_one("#download-bar", ProgressBar)
        bar.update(total=message.total or None, progress=message.done)
        self.query_one("#download-status", Static).update(
            f"Downloading: {human_size(message.done)} of {human_size(message.total)}"
        )

    def _download_finished(self, worker: Worker[Path]) -> None:
        from apus.embed.local.download import DownloadCancelled

        self.query_one("#download", Button).disabled = False
        self.query_one("#cancel-download", Button).disabled = True
        status = self.query_one("#download-status", Static)
        if worker.state == WorkerState.SUCCESS:
            self.model_ok = True
            status.update("Downloaded and verified.")
            self.query_one("#download", Button).display = False
        elif worker.state == WorkerState.CANCELLED or isinstance(worker.error, DownloadCancelled):
            status.update("Download paused; press Download to continue where it stopped.")
            self.query_one("#download", Button).label = "Resume download"
        else:
            status.update("The model could not be downloaded.")
            self.query_one("#download", Button).label = "Try again"
            self.query_one("#offline-message", Static).update(error_text(worker.error))
            self.query_one("#offline").display = True
            self.query_one("#keyword-only", Button).focus()
        self._update_next()

    @on(Button.Pressed, "#keyword-only")
    @on(Button.Pressed, "#test-keyword-only")
    def _keyword_only(self) -> None:
        self.provider = next(c for c in PROVIDER_CHOICES if c.name == "none")
        self._finish(self._choices())

    @on(Button.Pressed, "#save-untested")
    def _save_untested(self) -> None:
        """A server that is not running yet (Ollama on a box that is off): save it anyway;
        search says it is unavailable, with the reason, until it answers."""
        self._finish(self._choices())

    @on(Input.Changed, "#gguf")
    def _gguf_typed(self, event: Input.Changed) -> None:
        self._check_gguf(event.value)

    @work(exclusive=True, group="gguf-check", exit_on_error=False)
    async def _check_gguf(self, raw: str) -> None:
        await asyncio.sleep(0.2)
        check = await asyncio.to_thread(check_gguf, raw)
        verdict = self.query_one("#gguf-verdict", Static)
        verdict.update(("✓ " if check.ok else "✗ ") + check.message if raw.strip() else "")
        verdict.set_class(check.ok, "-ok")
        verdict.set_class(not check.ok, "-error")
        self.gguf_path = str(check.path) if check.ok and check.path else ""
        self._update_next()

    # -- the test: one embedding with the chosen provider, before anything is saved -------

    def _choices(self) -> SetupChoices:
        assert self.folder is not None and self.folder.path is not None
        choice = self.provider
        if choice.name == "local":
            model = self.manifest.name if self.manifest else ""
            return SetupChoices(self.folder.path, "local", model=model, model_path=self.gguf_path)
        if choice.remote:
            url = self.query_one("#remote-url", Input).value.strip()
            return SetupChoices(
                self.folder.path,
                choice.name,
                model=self.query_one("#remote-model", Input).value.strip(),
                # The service's own address is the default: only a proxy is written down.
                base_url="" if choice.hosted and url == choice.default_url else url,
                api_key=self._pasted_key() if self._pasting_key() else "",
            )
        return SetupChoices(self.folder.path, "none")

    def _start_test(self, choices: SetupChoices) -> None:
        self.testing = True
        what = "the model on this computer" if choices.provider == "local" else self.provider.label
        self._show_test(f"Testing {what} with one embedding…")
        self._update_next()
        self._test(choices)

    @work(thread=True, exclusive=True, group="provider-test", exit_on_error=False)
    def _test(self, choices: SetupChoices) -> None:
        test_choices = choices
        if choices.provider == "local" and not choices.model_path and self.manifest is not None:
            from apus.embed.local.download import model_path

            # The file the wizard has just verified, whichever catalogue it came from.
            test_choices = replace(choices, model_path=str(model_path(self.manifest)))
        base = self.initial.search if self.initial else None
        result = try_provider(test_choices, base)
        self.app.call_from_thread(self._tested, choices, result)

    def _tested(self, choices: SetupChoices, result: ProbeResult) -> None:
        self.testing = False
        if not self.is_attached or self.step not in ("provider", "model"):
            return
        if result.ok:
            self.tested = f" The test embedding took {result.seconds:.1f} s."
            self._show_test(
                f"✓ It works: a {result.dims}-dimensional vector in {result.seconds:.1f} s."
            )
            self._finish(choices)
            return
        failure = f"✗ The test failed: {result.error}"
        if result.fix:
            failure += f"\nFix: {result.fix}"
        if self.step == "model":
            self.query_one("#offline-message", Static).update(
                failure + "\nYou can search by keyword now and turn meaning search on later."
            )
            self.query_one("#offline").display = True
            self.query_one("#keyword-only", Button).focus()
        else:
            self._show_test(failure)
            self.query_one("#test-failed").display = True
        self._update_next()

    def _show_test(self, text: str | None) -> None:
        status = self.query_one("#model-test" if self.step == "model" else "#provider-test", Static)
        status.update(text or "")
        status.display = bool(text)
        status.set_class(bool(text) and text.startswith("✗"), "-error")
        status.set_class(bool(text) and text.startswith("✓"), "-ok")
        if text is None:
            self.query_one("#test-failed").display = False
        else:
            self.call_after_refresh(status.scroll_visible, animate=False)

    # -- step 4: save and index ----------------------------------------------------------

    def _finish(self, choices: SetupChoices) -> None:
        try:
            written = save_choices(choices, config_file=self.options.config_file)
        except Exception as exc:  # a config the user broke by hand, or an unwritable folder
            self.notify(error_text(exc), title="Could not save the settings", severity="error")
            return
        self.choices = choices
        self.step = "index"
        self.query_one("#index-saved", Static).update(
            f"Saved your choices to {home_relative(written)}.{self.tested}"
        )
        self._show_step()
        self.apply_setup(choices)
        self.watch_background(self.background)

    def watch_background(self, work: BackgroundWork | None) -> None:
        if work is None or self.step != "index":
            return
        phase = self.query_one("#index-phase", Static)
        bar = self.query_one("#index-bar", ProgressBar)
        bar.display = work.total > 0
        if work.total:
            bar.update(total=work.total, progress=work.done)
        eta = eta_text(work.eta_seconds)
        counted = f" {work.done:,} of {work.total:,}" if work.total else "…"
        phase.update(f"{work.label}{counted}{' · ' + eta if eta else ''}")
        if work.phase == "embed":
            self._keyword_is_ready(
                "Keyword search is ready. Meaning search is being prepared in the background; "
                "you can start searching now."
            )

    def watch_sync_report(self, old: SyncReport | None, report: SyncReport | None) -> None:
        # The binding sets the last report again when it starts; only a new one is news.
        if report is None or report is old or self.step != "index":
            return
        self.query_one("#index-phase", Static).update(
            f"Indexed {report.files:,} notes ({report.chunks:,} passages)."
        )
        self.query_one("#index-bar", ProgressBar).display = False
        self._keyword_is_ready("All set. Your notes are searchable.")

    def _keyword_is_ready(self, text: str) -> None:
        self.keyword_ready = True
        self.query_one("#index-ready", Static).update(text)
        self._update_next()
        self.query_one("#next", Button).focus()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "download":
            if event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
                self._download_finished(event.worker)
        elif event.state == WorkerState.ERROR:
            notify_worker_error(self.app, event.worker)


def _initial_provider(settings: Settings | None) -> ProviderChoice:
    wanted = settings.search.provider if settings else "local"
    for choice in PROVIDER_CHOICES:
        if choice.name == wanted:
            return choice
    return PROVIDER_CHOICES[0]
