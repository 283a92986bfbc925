"""Snapshot tests at 120x40: search, preview, status, help, and each step of the wizard."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from apus.clients.catalog import Places
from apus.embed.local.catalog import ModelManifest
from apus.tui.screens.wizard import WizardOptions

from .factory import SIZE, SnapshotApp, fixed_hardware, index_for_app, make_app, settle

Compare = Callable[..., bool]

# A fixed address, since it is on screen: the discard port, which wizard_env checks refuses
# (the download then fails at once with "connection refused", in the same words anywhere).
UNREACHABLE_HUB = "http://127.0.0.1:9"

TEST_MODEL = ModelManifest(
    name="tiny-test",
    repo="apus-tests/tiny-GGUF",
    file="tiny.gguf",
    revision="0123456789abcdef0123456789abcdef01234567",
    size=1_234_567,
    sha256="0" * 64,
    dims=32,
    context=512,
    family="embeddinggemma",
    description="A tiny test model",
)


@pytest.fixture
def snap_vault(vault: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small vault, indexed into ~/index so every path on screen starts with ~."""
    monkeypatch.setenv("APUS_MEMORY__SEARCH__STORE__PATH", "~/index")
    index_for_app(vault, config_file)
    return vault


def typed(*keys: str) -> Callable[[Pilot[Any]], Any]:
    """Press the keys one at a time, letting every worker a key starts finish first."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def test_search_screen(snap_compare: Compare, snap_vault: Path, config_file: Path) -> None:
    app = make_app(snap_vault, config_file, app_class=SnapshotApp)
    assert snap_compare(app, terminal_size=SIZE, run_before=typed(*"coffee"))


def test_reader(snap_compare: Compare, snap_vault: Path, config_file: Path) -> None:
    app = make_app(snap_vault, config_file, app_class=SnapshotApp)
    assert snap_compare(app, terminal_size=SIZE, run_before=typed(*"moka", "down", "enter"))


def test_status_screen(snap_compare: Compare, snap_vault: Path, config_file: Path) -> None:
    app = make_app(snap_vault, config_file, app_class=SnapshotApp)
    assert snap_compare(app, terminal_size=SIZE, run_before=typed("f4"))


def test_help_screen(snap_compare: Compare, snap_vault: Path, config_file: Path) -> None:
    app = make_app(snap_vault, config_file, app_class=SnapshotApp)
    assert snap_compare(app, terminal_size=SIZE, run_before=typed("f1"))


def wizard(config_file: Path) -> SnapshotApp:
    options = WizardOptions(
        config_file=config_file,
        detect_hardware=fixed_hardware,
        catalog={TEST_MODEL.name: TEST_MODEL},
        folder_root=config_file.parent,
        # No agent client installed: the last step offers none (test_wizard_connect.py).
        places=Places(
            config_file.parent / "home",
            {"PATH": str(config_file.parent / "no-bin")},
            "Linux",
            config_file.parent,
        ),
    )
    app = make_app(None, config_file, app_class=SnapshotApp, wizard=options)
    assert isinstance(app, SnapshotApp)
    return app


@pytest.fixture
def wizard_env(monkeypatch: pytest.MonkeyPatch, vault: Path) -> Path:
    monkeypatch.delenv("APUS_MEMORY__SEARCH__PROVIDER")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__STORE__PATH", "~/index")
    monkeypatch.setenv("HF_ENDPOINT", UNREACHABLE_HUB)
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=5).close()
    except ConnectionRefusedError:
        return vault
    pytest.fail("something listens on 127.0.0.1:9: the offline wizard snapshots need a refusal")


def test_wizard_folder(snap_compare: Compare, wizard_env: Path, config_file: Path) -> None:
    run_before = typed(*"~/notes")
    assert snap_compare(wizard(config_file), terminal_size=SIZE, run_before=run_before)


def test_wizard_provider(snap_compare: Compare, wizard_env: Path, config_file: Path) -> None:
    run_before = typed(*"~/notes", "enter")
    assert snap_compare(wizard(config_file), terminal_size=SIZE, run_before=run_before)


def test_wizard_remote_provider(snap_compare: Compare, wizard_env: Path, config_file: Path) -> None:
    run_before = typed(*"~/notes", "enter", "down", "enter")
    assert snap_compare(wizard(config_file), terminal_size=SIZE, run_before=run_before)


def test_wizard_hosted_provider(
    snap_compare: Compare, wizard_env: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # OpenAI, with no key in the environment: the warning, the key choice, the paste field.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run_before = typed(*"~/notes", "enter", *["down"] * 4, "enter")
    assert snap_compare(wizard(config_file), terminal_size=SIZE, run_before=run_before)


def test_wizard_model(snap_compare: Compare, wizard_env: Path, config_file: Path) -> None:
    run_before = typed(*"~/notes", "enter", "ctrl+n")
    assert snap_compare(wizard(config_file), terminal_size=SIZE, run_before=run_before)


def test_wizard_model_offline(snap_compare: Compare, wizard_env: Path, config_file: Path) -> None:
    run_before = typed(*"~/notes", "enter", "ctrl+n", "enter")
    assert snap_compare(wizard(config_file), terminal_size=SIZE, run_before=run_before)


def test_wizard_index_done(snap_compare: Compare, wizard_env: Path, config_file: Path) -> None:
    # Offline, "Continue with keyword search only", then the first index runs.
    run_before = typed(*"~/notes", "enter", "ctrl+n", "enter", "enter")
    assert snap_compare(wizard(config_file), terminal_size=SIZE, run_before=run_before)
