"""The search screen with real embeddings (the tiny GGUF behind the managed llama.cpp server)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from textual.widgets import Static

from apus.embed.local.procs import pid_alive
from apus.tui.app import ApusApp
from apus.tui.screens.search import SearchScreen
from apus.tui.screens.status import StatusScreen
from apus.tui.widgets.status_bar import StatusBar
from support.tiny_gguf import write_tiny_gguf

from .factory import SIZE, Recorder, index_for_app, make_app, settle

# A restart after a crash may back off for a moment; give the app a few searches to recover.
RECOVERY_ATTEMPTS = 40


@pytest.fixture(scope="module")
def tiny_model(  # our own copy: a test here moves the file away for a while
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    folder = tmp_path_factory.mktemp("tiny-model")
    return write_tiny_gguf(folder / "tiny-embeddinggemma.gguf", name="tiny-embeddinggemma")


@pytest.fixture
def semantic_vault(
    vault: Path, config_file: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "local")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__LOCAL__MODEL_PATH", str(tiny_model))
    report = index_for_app(vault, config_file)
    assert report.embedded == report.chunks > 0
    return vault


def provider_text(app: ApusApp) -> str:
    return str(app.screen.query_one(StatusBar).query_one("#status-provider", Static).render())


async def search(pilot: object, app: ApusApp, query: str) -> None:
    screen = app.screen
    assert isinstance(screen, SearchScreen)
    field = screen.query_one("#query")
    field.value = ""  # type: ignore[attr-defined]
    await pilot.press(*query)  # type: ignore[attr-defined]
    await settle(pilot)  # type: ignore[arg-type]


async def test_keyword_results_come_first_then_hybrid_replaces_them(
    semantic_vault: Path, config_file: Path
) -> None:
    app = make_app(semantic_vault, config_file)
    recorder = Recorder(SearchScreen.ResultsReady)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        assert provider_text(app) == "● semantic ready"
        await search(pilot, app, "garden")
        passes = [m for m in recorder.of(SearchScreen.ResultsReady) if m.query == "garden"]  # type: ignore[attr-defined]
        assert [m.response.mode for m in passes] == ["keyword", "hybrid"]  # type: ignore[attr-defined]
        assert [m.final for m in passes] == [False, True]  # type: ignore[attr-defined]
        hybrid = passes[-1].response  # type: ignore[attr-defined]
        assert hybrid.legs["vector"].ran
        assert any("vector" in hit.legs for hit in hybrid.hits)
        assert app.screen.response is hybrid
        assert provider_text(app) == "● semantic ready"


async def test_a_crashed_embedding_server_shows_keyword_only_then_recovers(
    semantic_vault: Path, config_file: Path, tiny_model: Path
) -> None:
    app = make_app(semantic_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search(pilot, app, "coffee")
        embedder = app.memory.provider.embedder
        assert embedder is not None
        pid = embedder.describe()["pid"]
        assert pid and pid_alive(pid)

        # The server dies and cannot come back while its model file is away.
        hidden = tiny_model.with_suffix(".away")
        tiny_model.rename(hidden)
        try:
            os.kill(pid, signal.SIGKILL)
            await search(pilot, app, "garden")
            assert provider_text(app).startswith("○ keyword-only: ")
            response = app.screen.response
            assert response is not None and not response.legs["vector"].ran
            assert [hit.path for hit in response.hits] == ["notes/garden.md"]
        finally:
            hidden.rename(tiny_model)

        for _ in range(RECOVERY_ATTEMPTS):
            await search(pilot, app, "basil")
            if provider_text(app) == "● semantic ready":
                break
            await pilot.pause(0.25)
        assert provider_text(app) == "● semantic ready"
        assert app.screen.response.legs["vector"].ran  # type: ignore[union-attr]


async def test_quitting_leaves_no_embedding_server_behind(
    semantic_vault: Path, config_file: Path
) -> None:
    app = make_app(semantic_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search(pilot, app, "coffee")
        embedder = app.memory.provider.embedder
        assert embedder is not None
        pid = embedder.describe()["pid"]
        assert pid_alive(pid)
        await pilot.press("ctrl+q")
        await pilot.pause()
    for _ in range(50):
        if not pid_alive(pid):
            break
        await pilot.pause(0.1)
    assert not pid_alive(pid)


async def test_f4_shows_the_provider_and_the_probe_as_labelled_fields(
    semantic_vault: Path, config_file: Path
) -> None:
    app = make_app(semantic_vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f4")
        await settle(pilot)
        assert isinstance(app.screen, StatusScreen)
        body = str(app.screen.query_one("#status-body", Static).render())
        assert "Embeddings  ready" in body
        assert "model: tiny-embeddinggemma.gguf (local)" in body
        assert "endpoint: http://127.0.0.1:" in body
        assert "probe: ok, " in body and " dimensions in " in body
        # Every fact in words: no Python dict, list or None reaches the screen.
        assert "{'" not in body and "['" not in body and "None" not in body
