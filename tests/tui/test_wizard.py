"""Pilot tests of the setup wizard: folder checks, keyword-only, a fake hub, offline, a .gguf."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.notifications import Notify
from textual.widgets import Button, Static

from apus.embed.local.download import model_path
from apus.tui.app import ApusApp
from apus.tui.screens.search import SearchScreen
from apus.tui.screens.wizard import SetupScreen, WizardOptions
from apus.tui.widgets.results import ResultList
from support.fake_hub import TEST_REPO, TEST_REVISION, FakeHub, hub_manifest

from .factory import SIZE, Recorder, fixed_hardware, make_app, settle

REVISION = TEST_REVISION
REPO = TEST_REPO


@pytest.fixture
def hub(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with FakeHub() as server:
        server.add(REPO, REVISION, "tiny.gguf", tiny_model.read_bytes())
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


@pytest.fixture
def unreachable_hub(monkeypatch: pytest.MonkeyPatch, refusing_hub: str) -> None:
    """A hub address where connections are refused at once (held by the session)."""
    monkeypatch.setenv("HF_ENDPOINT", refusing_hub)


def wizard_app(config_file: Path, tiny_model: Path | None = None) -> ApusApp:
    catalog = None
    if tiny_model is not None:
        manifest = hub_manifest(tiny_model.read_bytes(), family="embeddinggemma")
        catalog = {manifest.name: manifest}
    options = WizardOptions(
        config_file=config_file,
        detect_hardware=fixed_hardware,
        catalog=catalog,
        folder_root=config_file.parent,
    )
    return make_app(None, config_file, wizard=options)


def saved(config_file: Path) -> dict[str, object]:
    return tomllib.loads(config_file.read_text(encoding="utf-8"))


def text(app: ApusApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def choose_folder(pilot: object, app: ApusApp, folder: str) -> None:
    await pilot.press(*folder, "enter")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]


async def test_no_vault_opens_the_wizard_and_keyword_only_completes(
    vault: Path, config_file: Path
) -> None:
    app = wizard_app(config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SetupScreen)
        await choose_folder(pilot, app, "~/notes")
        assert app.screen.step == "provider"
        # provider = none in the test environment, so "Keyword only" is preselected.
        assert "Keyword only" in app.screen.provider.label
        assert "8 CPU cores" in text(app, "#hardware")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.screen.step == "index"
        assert "All set" in text(app, "#index-ready")
        assert saved(config_file)["vault"] == str(vault)
        search = saved(config_file)["memory"]["search"]  # type: ignore[index]
        assert search["provider"] == "none"
        await pilot.press("ctrl+n")  # Start searching
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"tomatoes")
        await settle(pilot)
        assert [hit.path for hit in app.screen.query_one(ResultList).hits] == ["notes/garden.md"]


async def test_folder_check_refuses_a_file_and_a_missing_folder(
    vault: Path, config_file: Path
) -> None:
    app = wizard_app(config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose_folder(pilot, app, "~/notes/MEMORY.md")
        assert app.screen.step == "folder"
        assert "is a file" in text(app, "#folder-verdict")
        assert app.screen.query_one("#next", Button).disabled
        await pilot.press(*["backspace"] * len("/MEMORY.md"), *"-missing", "enter")
        await settle(pilot)
        assert "does not exist" in text(app, "#folder-verdict")
        assert app.screen.step == "folder"


async def test_escape_on_the_first_step_without_a_vault_quits(config_file: Path) -> None:
    app = wizard_app(config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert app.return_code == 0
    assert not config_file.exists()


async def test_the_model_downloads_from_the_hub_with_progress(
    vault: Path,
    config_file: Path,
    tiny_model: Path,
    hub: FakeHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("APUS_MEMORY__SEARCH__PROVIDER")
    app = wizard_app(config_file, tiny_model)
    recorder = Recorder(SetupScreen.DownloadProgress)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        await choose_folder(pilot, app, "~/notes")
        assert app.screen.provider.name == "local"
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.screen.step == "model"
        assert text(app, "#download-status") == "Not downloaded yet."
        await pilot.press("enter")  # the Download button has focus
        await settle(pilot)
        assert text(app, "#download-status") == "Downloaded and verified."
        progress = recorder.of(SetupScreen.DownloadProgress)
        size = tiny_model.stat().st_size
        assert progress and progress[-1].done == size  # type: ignore[attr-defined]
        manifest = hub_manifest(tiny_model.read_bytes(), family="embeddinggemma")
        assert model_path(manifest).read_bytes() == tiny_model.read_bytes()
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.screen.step == "index"
        search = saved(config_file)["memory"]["search"]  # type: ignore[index]
        assert (search["provider"], search["model"]) == ("local", "tiny-test")
        assert [request.path for request in hub.gets()] == [f"/{REPO}/resolve/{REVISION}/tiny.gguf"]


async def test_an_unreachable_hub_offers_keyword_only_without_hanging(
    vault: Path,
    config_file: Path,
    tiny_model: Path,
    unreachable_hub: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("APUS_MEMORY__SEARCH__PROVIDER")
    app = wizard_app(config_file, tiny_model)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose_folder(pilot, app, "~/notes")
        await pilot.press("ctrl+n")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.query_one("#offline").display
        assert "Cannot reach the model hub" in text(app, "#offline-message")
        assert app.screen.query_one("#next", Button).disabled
        await pilot.press("enter")  # "Continue with keyword search only" has focus
        await settle(pilot)
        assert app.screen.step == "index"
        search = saved(config_file)["memory"]["search"]  # type: ignore[index]
        assert search["provider"] == "none"


async def test_offline_a_local_gguf_can_be_used_instead(
    vault: Path,
    config_file: Path,
    tiny_model: Path,
    unreachable_hub: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("APUS_MEMORY__SEARCH__PROVIDER")
    app = wizard_app(config_file, tiny_model)
    recorder = Recorder(Notify)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        await choose_folder(pilot, app, "~/notes")
        await pilot.press("ctrl+n")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        app.screen.query_one("#gguf").focus()
        await pilot.press(*str(tiny_model))
        await settle(pilot)
        assert text(app, "#gguf-verdict").startswith("✓ tiny-embeddinggemma.gguf")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.screen.step == "index"
        search = saved(config_file)["memory"]["search"]  # type: ignore[index]
        assert search["provider"] == "local"
        assert search["local"]["modelPath"] == str(tiny_model)
        assert "All set" in text(app, "#index-ready")
        assert app.sync_report is not None and app.sync_report.embedded > 0
    assert not [t for t in recorder.notifications() if "failed" in t.lower()]
