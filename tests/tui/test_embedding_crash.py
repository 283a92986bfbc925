"""The app when the managed llama.cpp server dies with a real SIGILL on every embedding: the
status bar and F4 name the signal and the fix, never "rebuilding" (or "embedding"), and search
keeps working. And while a first embedding runs: "embedding", one figure left and right."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from textual.widgets import Static

from apus.indexing.progress import Eta
from apus.tui.app import ApusApp
from apus.tui.format import eta_text
from apus.tui.screens.search import SearchScreen
from apus.tui.screens.status import StatusScreen
from apus.tui.state import BackgroundWork, ProviderView
from apus.tui.widgets.status_bar import StatusBar
from support.holds import Hold
from support.server_killer import ServerKiller, server_pids
from support.vaults import run_apus

from .factory import SIZE, make_app, settle, write_vault

# Enough passages that embedding them takes many requests: the kill lands in the middle.
NOTES = {
    f"notes/n{number:03}.md": f"# Note {number}\n\n" + "garden coffee python memory " * 75
    for number in range(60)
}
NOTES["notes/router.md"] = "# Router\n\nThe router sits in the hallway closet.\n"


def provider_text(app: ApusApp) -> str:
    return str(app.screen.query_one(StatusBar).query_one("#status-provider", Static).render())


async def test_a_server_that_crashes_with_sigill_is_named_in_the_status_bar_and_f4(
    tmp_path: Path, config_file: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "local")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__LOCAL__MODEL_PATH", str(tiny_model))
    vault = write_vault(tmp_path / "home" / "notes", NOTES)
    runtime = Path(os.environ["XDG_RUNTIME_DIR"]) / "apus"
    with ServerKiller(runtime, signal.SIGILL) as killer:
        # By hand first: two crashes (the first request, then the retry after a restart).
        run_apus("--config", config_file, "--vault", vault, "memory", "index",
                 env=dict(os.environ), expect=3)  # fmt: skip
        app = make_app(vault, config_file)
        shown: list[str] = []
        async with app.run_test(size=SIZE) as pilot:
            app.watch(app, "provider", lambda view: shown.append(view.text))
            await settle(pilot)  # the app's own sync meets the third crash
            await settle(pilot)  # and the status it reloads after the sync
            text = provider_text(app)
            assert text.startswith("✗ unavailable: the embedding server crashed 3 times")
            assert "SIGILL (illegal instruction)" in text
            assert not shown[-1].startswith(("rebuilding", "embedding"))
            assert app.background is None  # nothing pretends to be running
            started = len(killer.killed)

            # Search by words still works, and starts no server.
            await pilot.press(*"hallway")
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, SearchScreen) and screen.response is not None
            assert [hit.path for hit in screen.response.hits] == ["notes/router.md"]

            await pilot.press("f4")
            await settle(pilot)
            assert isinstance(app.screen, StatusScreen)
            body = str(app.screen.query_one("#status-body", Static).render())
            assert "unavailable: the embedding server crashed 3 times" in body
            assert "SIGILL (illegal instruction)" in body
            assert "Fix: .venv/bin/python packaging/llama_build.py" in body
            assert "probing" not in body
    assert len(killer.killed) == started and not server_pids(runtime)


async def test_embedding_shows_progress_with_an_eta_and_embedding_only_while_it_runs(
    tmp_path: Path, config_file: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "local")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__LOCAL__MODEL_PATH", str(tiny_model))
    # The app's sync stops once it has embedded its first 16 passages, until let go.
    hold = Hold(tmp_path / "hold")
    for name, value in hold.env("embed:16").items():
        monkeypatch.setenv(name, value)
    notes = {
        f"notes/m{number:03}.md": f"# Note {number}\n\n" + "water light tree house " * 75
        for number in range(150)  # many batches of 16 passages
    }
    vault = write_vault(tmp_path / "home" / "notes", notes)
    app = make_app(vault, config_file)
    views: list[ProviderView] = []
    work: list[tuple[BackgroundWork, str]] = []

    def on_work(item: BackgroundWork | None) -> None:
        if item is not None and item.phase == "embed":
            label = app.screen.query_one(StatusBar).query_one("#status-work", Static)
            work.append((item, str(label.render())))

    async with app.run_test(size=SIZE) as pilot:
        app.watch(app, "provider", lambda view: views.append(view))
        app.watch(app, "background", on_work)
        while (point := hold.held()) is None:
            await pilot.pause(0.01)
        assert (point["phase"], point["done"]) == ("embed", 16) and point["total"] > 32
        # Embedding, and shown so: the status bar says embedding (a first build: nothing is
        # rebuilt) and how far it has got, the same figure on the left as on the right.
        while not work or work[-1][0].done != 16:
            await pilot.pause(0.01)
        assert work[-1][1].startswith(f"Embedding passages 16/{point['total']:,}")
        while app.provider.state != "embedding":  # the status it reloads as embedding began
            await pilot.pause(0.01)
        assert app.provider.text == f"embedding {100 * 16 // point['total']}%"
        # What is embedded is searchable already, and the status bar says how much.
        while "meaning search covers" not in app.provider.detail:
            await pilot.pause(0.01)
        assert app.provider.text == f"embedding {100 * 16 // point['total']}%"
        # An ETA needs a rate measured over Eta.MIN_ELAPSED_S of embedding: held that long,
        # the next batch's progress has one, on a machine of any speed.
        while time.monotonic() < point["t"] + Eta.MIN_ELAPSED_S:
            await pilot.pause(0.01)
        hold.release()
        await settle(pilot)
        await settle(pilot)
        assert provider_text(app) == "● semantic ready"
    timed = [(item, text) for item, text in work if item.eta_seconds is not None]
    # At the latest the first batch after the hold has a rate to go on.
    assert timed and timed[0][0].done <= 32, [item for item, _ in work]
    for item, text in timed:
        eta = eta_text(item.eta_seconds)
        assert eta and text == f"Embedding passages {item.done:,}/{item.total:,} · {eta}"
    embedding = [view for view in views if view.state == "embedding"]
    assert embedding, "the embedding that ran was never shown"
    assert not [view for view in views if view.state == "rebuilding"]
    assert views[-1].state == "ready"
