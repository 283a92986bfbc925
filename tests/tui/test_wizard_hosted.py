"""Pilot tests of the wizard with hosted providers against local fakes of their APIs: the
cost and privacy warning, a pasted key (tested with one request before anything is saved,
then stored with mode 0600 and never shown) or the environment's key, and a failed test that
keeps the user on the step with the reason."""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Button, Input

from apus.tui.app import ApusApp
from apus.tui.screens.wizard import SetupScreen
from support.fake_apis import GeminiFake, OpenAIShapedFake

from .factory import SIZE, settle
from .test_wizard import choose_folder, saved, text, unreachable_hub, wizard_app

__all__ = ["unreachable_hub"]  # a fixture, used by name

OPENAI_KEY = "sk-proj-WIZARDkey0000000000000000000000"
GEMINI_KEY = "AIzaWIZARDgemini44444444444444444444444"
CREDENTIALS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "VOYAGE_API_KEY")


@pytest.fixture(autouse=True)
def hosted_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No developer keys; the provider the wizard saves is the one used (no env override)."""
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("APUS_MEMORY__SEARCH__PROVIDER")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__OUTPUTDIMENSIONALITY", "8")


@pytest.fixture
def openai() -> Iterator[OpenAIShapedFake]:
    with OpenAIShapedFake(api_key=OPENAI_KEY, style="openai", prefix="/v1") as fake:
        yield fake


async def choose_provider(pilot: object, app: ApusApp, name: str) -> None:
    """Move down the provider list with the keyboard and select `name`."""
    screen = app.screen
    assert isinstance(screen, SetupScreen)
    from apus.first_run import PROVIDER_CHOICES

    index = [choice.name for choice in PROVIDER_CHOICES].index(name)
    current = [choice.name for choice in PROVIDER_CHOICES].index(screen.provider.name)
    keys = ["down"] * (index - current) if index >= current else ["up"] * (current - index)
    await pilot.press(*keys, "enter")  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]
    assert screen.provider.name == name


async def replace_text(pilot: object, app: ApusApp, selector: str, value: str) -> None:
    field = app.screen.query_one(selector, Input)
    field.focus()
    field.value = ""
    await pilot.press(*value)  # type: ignore[attr-defined]


def screen_text(app: ApusApp) -> str:
    return app.export_screenshot()


async def test_a_pasted_key_is_tested_then_saved_privately_and_never_shown(
    vault: Path, config_file: Path, openai: OpenAIShapedFake
) -> None:
    app = wizard_app(config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose_folder(pilot, app, "~/notes")
        await choose_provider(pilot, app, "openai")
        warning = text(app, "#provider-warning")
        assert warning.startswith("⚠ OpenAI receives the text of every note")
        assert "bills your account" in warning
        assert text(app, "#key-env") == "OPENAI_API_KEY is not set in this environment."
        assert app.screen.query_one("#api-key").display  # nothing to take: paste it
        assert app.screen.query_one("#next", Button).disabled
        await replace_text(pilot, app, "#remote-url", openai.url + "/v1")
        # A wrong key: the test fails, nothing is saved, the user stays here.
        await replace_text(pilot, app, "#api-key", OPENAI_KEY[:-4] + "XXXX")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.screen.step == "provider"
        failure = text(app, "#provider-test")
        assert failure.startswith("✗ The test failed:") and "refused the credentials" in failure
        assert "Fix:" in failure
        assert not config_file.exists()
        assert app.screen.query_one("#test-failed").display  # keyword-only, or save it untested
        # The right key: one request, then the choices are saved and the index starts.
        await replace_text(pilot, app, "#api-key", OPENAI_KEY)
        assert text(app, "#provider-test") == ""  # the old verdict no longer applies
        shown = screen_text(app)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.screen.step == "index"
        assert "All set" in text(app, "#index-ready")
        assert app.sync_report is not None and app.sync_report.embedded > 0
        shown += screen_text(app)
    search = saved(config_file)["memory"]["search"]  # type: ignore[index]
    assert (search["provider"], search["model"]) == ("openai", "text-embedding-3-small")
    assert search["remote"] == {"baseUrl": openai.url + "/v1", "apiKey": OPENAI_KEY}
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert OPENAI_KEY not in shown and OPENAI_KEY[:-4] not in shown
    auth = {request.headers.get("authorization") for request in openai.matching("/embeddings")}
    assert auth == {f"Bearer {OPENAI_KEY[:-4]}XXXX", f"Bearer {OPENAI_KEY}"}


async def test_the_environment_key_is_named_used_and_not_stored(
    vault: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text('# my settings\n[tui]\ntheme = "nord"\n', encoding="utf-8")
    with GeminiFake(api_key=GEMINI_KEY) as fake:
        app = wizard_app(config_file)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await choose_folder(pilot, app, "~/notes")
            await choose_provider(pilot, app, "gemini")
            assert text(app, "#key-env") == "GEMINI_API_KEY is set in this environment."
            assert not app.screen.query_one("#api-key").display
            assert app.screen.query_one("#provider-warning").display
            await replace_text(pilot, app, "#remote-url", fake.url + "/v1beta")
            await pilot.press("ctrl+n")
            await settle(pilot)
            assert app.screen.step == "index"
            assert "All set" in text(app, "#index-ready")
        paths = fake.paths()
    written = config_file.read_text(encoding="utf-8")
    assert written.startswith("# my settings")  # the user's comments stay
    remote = tomllib.loads(written)["memory"]["search"]["remote"]
    assert remote["apiKey"] == ""  # the environment's key is used, never copied
    assert GEMINI_KEY not in written
    assert paths[0] == "/v1beta/models/gemini-embedding-001:batchEmbedContents"


async def test_a_local_model_that_cannot_embed_offers_keyword_only_with_the_reason(
    vault: Path, config_file: Path, tmp_path: Path, unreachable_hub: None
) -> None:
    from support.tiny_gguf import write_tiny_gguf

    whole = write_tiny_gguf(tmp_path / "model.gguf", name="tiny-embeddinggemma").read_bytes()
    broken = tmp_path / "broken-embeddinggemma.gguf"
    broken.write_bytes(whole[:-256])  # the header reads fine; the weights end too soon
    app = wizard_app(config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose_folder(pilot, app, "~/notes")
        await choose_provider(pilot, app, "local")
        await pilot.press("ctrl+n")
        await settle(pilot)
        await pilot.press("enter")  # Download: the hub cannot be reached
        await settle(pilot)
        app.screen.query_one("#gguf").focus()
        await pilot.press(*str(broken))
        await settle(pilot)
        assert text(app, "#gguf-verdict").startswith("✓")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.screen.step == "model"  # nothing saved: the model could not embed
        assert not config_file.exists()
        assert app.screen.query_one("#offline").display
        assert text(app, "#offline-message").startswith("✗ The test failed:")
        await pilot.press("enter")  # "Continue with keyword search only" has focus
        await settle(pilot)
        assert app.screen.step == "index"
    assert saved(config_file)["memory"]["search"]["provider"] == "none"  # type: ignore[index]


async def test_bedrock_asks_for_no_key_and_says_it_signs_with_aws_credentials(
    vault: Path, config_file: Path
) -> None:
    app = wizard_app(config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose_folder(pilot, app, "~/notes")
        await choose_provider(pilot, app, "bedrock")
        assert text(app, "#key-env").startswith("Signed with your AWS credentials")
        assert not app.screen.query_one("#key-source").display
        assert not app.screen.query_one("#api-key").display
        assert text(app, "#provider-warning").startswith("⚠ Amazon Bedrock receives the text")
        assert not app.screen.query_one("#next", Button).disabled
        await choose_provider(pilot, app, "none")  # a local choice hides all of it
        assert not app.screen.query_one("#key-fields").display
        assert not app.screen.query_one("#provider-warning").display


async def test_a_server_that_is_not_up_yet_can_be_saved_untested(
    vault: Path, config_file: Path, unreachable_hub: None
) -> None:
    port = os.environ["HF_ENDPOINT"].rsplit(":", 1)[1]  # nothing listens there
    app = wizard_app(config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose_folder(pilot, app, "~/notes")
        await choose_provider(pilot, app, "ollama")
        assert not app.screen.query_one("#key-fields").display
        await replace_text(pilot, app, "#remote-url", f"http://127.0.0.1:{port}")
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert app.screen.step == "provider"
        assert text(app, "#provider-test").startswith("✗ The test failed:")
        assert not config_file.exists()
        await pilot.click("#save-untested")
        await settle(pilot)
        assert app.screen.step == "index"
    search = saved(config_file)["memory"]["search"]  # type: ignore[index]
    assert (search["provider"], search["remote"]["baseUrl"]) == (
        "ollama",
        f"http://127.0.0.1:{port}",
    )
