"""Setup step 2: where embeddings come from, with a hosted service's key and warning."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static

from apus.config import Settings
from apus.first_run import (
    PROVIDER_CHOICES,
    Hardware,
    ProviderChoice,
    SetupChoices,
    key_in_environment,
)
from apus.tui.widgets.setup.step import SetupStep


class _Details(VerticalScroll, can_focus=False):
    """The chosen provider's fields: Tab goes from the list straight to them."""


class ProviderStep(SetupStep):
    """Ready once a remote provider has its address, model and key; contributes the provider
    and those fields. A failed test offers keyword-only or saving it untested."""

    key = "provider"
    heading = "How Apus understands meaning"

    def __init__(self, settings: Settings | None, detect_hardware: Callable[[], Hardware]) -> None:
        super().__init__()
        self.provider: ProviderChoice = _initial_provider(settings)
        self.detect_hardware = detect_hardware

    def compose(self) -> ComposeResult:
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
                yield from self._compose_details()

    def _compose_details(self) -> ComposeResult:
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
        self._show_provider(self.provider)
        self._detect()

    # -- what the screen asks ------------------------------------------------------------

    @property
    def ready(self) -> bool:
        choice = self.provider
        if not choice.remote:
            return True
        url = self.query_one("#remote-url", Input).value.strip()
        if not choice.hosted:
            return bool(url)
        model = self.query_one("#remote-model", Input).value.strip()
        return bool(model) and (not self._pasting_key() or bool(self._pasted_key()))

    def contribute(self, choices: SetupChoices) -> SetupChoices:
        choice = self.provider
        if not choice.remote:
            return replace(choices, provider=choice.name)
        url = self.query_one("#remote-url", Input).value.strip()
        return replace(
            choices,
            provider=choice.name,
            model=self.query_one("#remote-model", Input).value.strip(),
            # The service's own address is the default: only a proxy is written down.
            base_url="" if choice.hosted and url == choice.default_url else url,
            api_key=self._pasted_key() if self._pasting_key() else "",
        )

    def enter(self) -> None:
        self.query_one("#provider-choice", RadioSet).focus()

    def show_test(self, text: str | None) -> None:
        self.show_verdict(self.query_one("#provider-test", Static), text)
        if text is None:
            self.query_one("#test-failed").display = False

    def show_failure(self, text: str) -> None:
        self.show_test(text)
        self.query_one("#test-failed").display = True

    # -- the choice and its fields -------------------------------------------------------

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
        self.show_test(None)
        if choice.remote:
            url = self.query_one("#remote-url", Input)
            model = self.query_one("#remote-model", Input)
            known = {c.default_url for c in PROVIDER_CHOICES}
            if not url.value or url.value in known:
                url.value = choice.default_url
            known_models = {c.default_model for c in PROVIDER_CHOICES}
            if not model.value or model.value in known_models:
                model.value = choice.default_model
        self.post_message(self.Changed(self))

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
        self.show_test(None)
        self.post_message(self.Changed(self))

    @on(Input.Changed, "#remote-url")
    @on(Input.Changed, "#remote-model")
    @on(Input.Changed, "#api-key")
    def _field_changed(self) -> None:
        if not self.testing:
            self.show_test(None)  # a verdict on other values no longer applies
        self.post_message(self.Changed(self))

    # -- this computer -------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="hardware", exit_on_error=False)
    def _detect(self) -> None:
        hardware = self.detect_hardware()
        self.app.call_from_thread(self._show_hardware, hardware)

    def _show_hardware(self, hardware: Hardware) -> None:
        if self.is_attached:
            self.query_one("#hardware", Static).update(f"This computer: {hardware.summary}")


def _initial_provider(settings: Settings | None) -> ProviderChoice:
    wanted = settings.search.provider if settings else "local"
    for choice in PROVIDER_CHOICES:
        if choice.name == wanted:
            return choice
    return PROVIDER_CHOICES[0]
