"""Each setup step on its own, mounted in a bare app: when it is `ready`, and what it
`contribute`s to the choices."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Input, RadioSet

from apus.first_run import PROVIDER_CHOICES, SetupChoices
from apus.indexing.sync import SyncReport
from apus.tui.state import BackgroundWork
from apus.tui.widgets.setup.folder import FolderStep
from apus.tui.widgets.setup.index import IndexStep
from apus.tui.widgets.setup.model import ModelStep
from apus.tui.widgets.setup.provider import ProviderStep
from apus.tui.widgets.setup.step import SetupStep
from support.fake_hub import hub_manifest
from support.tiny_gguf import write_tiny_gguf

from .factory import SIZE, fixed_hardware, index_for_app, settle

START = SetupChoices(Path(), "none")


class StepApp(App[None]):
    """One step and nothing else; keeps the `Changed` messages it hears."""

    def __init__(self, step: SetupStep) -> None:
        super().__init__()
        self.step = step
        self.changes: list[SetupStep.Changed] = []

    def compose(self) -> ComposeResult:
        yield self.step

    def on_setup_step_changed(self, event: SetupStep.Changed) -> None:
        self.changes.append(event)


async def test_the_folder_step_is_ready_for_a_usable_folder_and_contributes_the_vault(
    vault: Path,
) -> None:
    step = FolderStep("", root=vault.parent)
    app = StepApp(step)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not step.ready
        step.enter()
        await pilot.press(*str(vault / "MEMORY.md"), "enter")
        await settle(pilot)
        assert not step.ready  # a file, not a folder
        step.query_one("#folder-input", Input).value = ""
        await pilot.press(*str(vault), "enter")
        await settle(pilot)
        assert step.ready
        assert app.changes[-1].advance  # Enter on a usable folder goes on
        assert step.contribute(START) == SetupChoices(vault.resolve(), "none")


async def test_the_provider_step_needs_a_url_for_a_server_and_contributes_its_fields() -> None:
    step = ProviderStep(None, fixed_hardware)
    app = StepApp(step)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert step.provider.name == "local" and step.ready
        assert step.contribute(START) == SetupChoices(Path(), "local")
        names = [choice.name for choice in PROVIDER_CHOICES]
        step.query_one("#provider-choice", RadioSet).focus()
        await pilot.press(*["down"] * names.index("ollama"), "enter")
        await settle(pilot)
        assert step.provider.name == "ollama" and step.ready  # its usual address is filled in
        url = step.query_one("#remote-url", Input)
        url.value = ""
        await settle(pilot)
        assert not step.ready
        url.value = "http://192.168.1.9:11434"
        await settle(pilot)
        assert step.ready
        assert step.contribute(START) == SetupChoices(
            Path(), "ollama", model="embeddinggemma", base_url="http://192.168.1.9:11434"
        )


async def test_a_hosted_provider_needs_a_pasted_key_when_the_environment_has_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    step = ProviderStep(None, fixed_hardware)
    app = StepApp(step)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        names = [choice.name for choice in PROVIDER_CHOICES]
        step.query_one("#provider-choice", RadioSet).focus()
        await pilot.press(*["down"] * names.index("openai"), "enter")
        await settle(pilot)
        assert not step.ready  # no key yet
        step.query_one("#api-key", Input).value = "sk-test-key"
        await settle(pilot)
        assert step.ready
        choices = step.contribute(START)
        # The service's own address is not written down; the pasted key is.
        assert (choices.provider, choices.base_url, choices.api_key) == (
            "openai",
            "",
            "sk-test-key",
        )


async def test_the_model_step_is_ready_with_a_usable_gguf_and_adds_it_to_a_local_choice(
    tmp_path: Path,
) -> None:
    model = write_tiny_gguf(tmp_path / "tiny-embeddinggemma.gguf", name="tiny-embeddinggemma")
    manifest = hub_manifest(model.read_bytes(), family="embeddinggemma")
    step = ModelStep({manifest.name: manifest})
    app = StepApp(step)
    async with app.run_test(size=SIZE) as pilot:
        step.enter()
        await settle(pilot)
        assert not step.ready  # not downloaded
        step.query_one("#offline").display = True
        step.query_one("#gguf", Input).value = str(tmp_path / "missing.gguf")
        await settle(pilot)
        assert not step.ready
        step.query_one("#gguf", Input).value = str(model)
        await settle(pilot)
        assert step.ready
        local = step.contribute(SetupChoices(Path(), "local"))
        assert (local.model, local.model_path) == (manifest.name, str(model))
        # Another provider's choices are not the model step's business.
        assert step.contribute(START) == START


async def test_the_index_step_is_ready_once_keyword_search_works_and_adds_nothing(
    vault: Path, config_file: Path
) -> None:
    step = IndexStep()
    app = StepApp(step)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        step.show_work(BackgroundWork("Reading notes", "index", 2, 5))
        assert not step.ready
        step.show_work(BackgroundWork("Embedding", "embed", 0, 5))
        assert step.ready  # keyword search works while meaning search is prepared
        report: SyncReport = index_for_app(vault, config_file)
        step.show_report(report)
        await settle(pilot)
        assert app.changes and app.changes[-1].focus_next
        assert step.contribute(START) == START
