"""A managed llama.cpp server killed by a real signal in the middle of `apus memory index`.

The kill is the real thing (SIGILL, SIGSEGV, SIGABRT sent to the real child process, which
runs the tiny GGUF): every face must name the signal, three crashes in a row stop restarts
while keyword search goes on, and the next `apus memory index` run by hand tries again.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from apus.config import SettingsSource
from apus.embed.local.crashes import MAX_CRASHES_IN_A_ROW
from apus.memory import Memory
from apus.tui.screens.status import status_content
from support.server_killer import ServerKiller, server_pids
from support.vaults import run_apus, write_note

# Enough notes that embedding them takes many requests: the kill lands in the middle.
NOTES = 60
EXIT_EMBEDDINGS_INCOMPLETE = 3
WORDS = ["garden", "coffee", "python", "memory", "project", "meeting", "plan", "water", "tree"]
NAMES = {
    signal.SIGILL: "SIGILL (illegal instruction)",
    signal.SIGSEGV: "SIGSEGV (segmentation fault)",
    signal.SIGABRT: "SIGABRT (aborted)",
}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for number in range(NOTES):
        body = " ".join(WORDS[(number + step) % len(WORDS)] for step in range(300))
        write_note(root, f"notes/n{number:03}.md", f"# Note {number}\n\n{body}\n")
    write_note(root, "notes/router.md", "# Router\n\nThe router sits in the hallway closet.\n")
    return root


@pytest.fixture
def local_env(tiny_model: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        APUS_MEMORY__SEARCH__PROVIDER="local",
        APUS_MEMORY__SEARCH__LOCAL__MODEL_PATH=str(tiny_model),
        APUS_MEMORY__SEARCH__SYNC__WATCH="false",
    )
    return env


@pytest.fixture
def runtime() -> Path:
    return Path(os.environ["XDG_RUNTIME_DIR"]) / "apus"


def index(vault: Path, env: dict[str, str], *args: str, expect: int) -> str:
    result = run_apus("--vault", vault, "memory", "index", *args, env=env, expect=expect)
    return result.stdout + result.stderr


def status_json(vault: Path, env: dict[str, str]) -> dict[str, object]:
    result = run_apus("--vault", vault, "memory", "status", "--json", env=env)
    return json.loads(result.stdout)["embeddings"]  # type: ignore[no-any-return]


def background_sync(vault: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    """One sync as the app and the agent server run theirs (never a run by hand)."""
    for name, value in env.items():
        if name.startswith("APUS_"):
            monkeypatch.setenv(name, value)
    with Memory(SettingsSource(vault=vault)) as memory:
        report = memory.sync()
    assert not report.embedding.ok
    return report.embedding.message()


@pytest.mark.parametrize("signum", list(NAMES), ids=lambda s: signal.Signals(s).name)
def test_a_server_killed_mid_index_is_named_with_a_fix(
    signum: int, vault: Path, local_env: dict[str, str], runtime: Path
) -> None:
    with ServerKiller(runtime, signum) as killer:
        output = index(vault, local_env, expect=EXIT_EMBEDDINGS_INCOMPLETE)
    assert killer.killed, "no server was started"
    assert f"the embedding server crashed: {NAMES[signum]}" in output
    assert "Fix: " in output and "Traceback" not in output
    if signum == signal.SIGILL:
        assert "CPU instructions this machine cannot run" in output
        assert "packaging/llama_build.py" in output
    # Keyword data is all there; some vectors were made before the kill, not all.
    embeddings = status_json(vault, local_env)
    assert embeddings["state"] == "keyword-only"
    assert NAMES[signum] in str(embeddings["reason"])
    assert "rebuilding" not in str(embeddings["reason"])
    found = run_apus(
        "--vault", vault, "memory", "search", "hallway closet", "--json", env=local_env
    )
    assert json.loads(found.stdout)["results"][0]["path"] == "notes/router.md"


@pytest.mark.slow
def test_three_crashes_stop_restarts_until_index_is_run_by_hand(
    vault: Path, local_env: dict[str, str], runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ServerKiller(runtime, signal.SIGILL) as killer:
        index(vault, local_env, expect=EXIT_EMBEDDINGS_INCOMPLETE)  # two crashes: try, retry
        message = background_sync(vault, local_env, monkeypatch)  # the third
        assert f"crashed {MAX_CRASHES_IN_A_ROW} times in a row" in message
        started = len(killer.killed)
        # Syncs in the background start nothing any more, and say why at once.
        assert "SIGILL (illegal instruction)" in background_sync(vault, local_env, monkeypatch)
        assert len(killer.killed) == started and not server_pids(runtime)

        embeddings = status_json(vault, local_env)
        assert embeddings["state"] == "unavailable"
        assert "SIGILL (illegal instruction)" in str(embeddings["reason"])
        assert "packaging/llama_build.py" in str(embeddings["fix"])
        deep = json.loads(
            run_apus("--vault", vault, "memory", "status", "--deep", "--json", env=local_env).stdout
        )["embeddings"]
        assert deep["state"] == "unavailable" and "SIGILL" in deep["reason"]
        mcp_status, mcp_search = asyncio.run(_ask_mcp(vault, local_env))
        assert mcp_status["embeddings"]["state"] == "unavailable"
        assert "SIGILL (illegal instruction)" in mcp_status["embeddings"]["reason"]
        assert mcp_search["results"][0]["path"] == "notes/router.md"
        assert len(killer.killed) == started  # the agent server started no server either

    # Run by hand (the build is fixed now: nothing kills the server), it tries again.
    report = json.loads(index(vault, local_env, "--json", expect=0))
    assert report["embedding"]["state"] == "done" and report["embedded"] > 0
    assert status_json(vault, local_env)["state"] == "ready"


@pytest.mark.slow
def test_a_crash_the_sync_went_on_after_stays_in_sight_until_a_clean_sync(
    vault: Path, local_env: dict[str, str], runtime: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One SIGILL mid-index: the server is restarted and the index completes, and the crash is
    kept in `lastSync` (status, F4, doctor) until a sync runs without one."""
    with ServerKiller(runtime, signal.SIGILL, limit=1) as killer:
        indexed = run_apus("--vault", vault, "memory", "index", "--json", env=local_env)
    report = json.loads(indexed.stdout)
    assert "crashed (SIGILL" in indexed.stderr  # named as it happened
    assert len(killer.killed) == 1 and report["embedding"]["state"] == "done"
    last = json.loads(
        run_apus("--vault", vault, "memory", "status", "--json", env=local_env).stdout
    )["lastSync"]
    assert last["ok"] is True
    crashes = last["recoveredCrashes"]
    assert crashes["count"] == 1 and crashes["last"] == NAMES[signal.SIGILL]
    assert "packaging/llama_build.py" in crashes["fix"] and crashes["at"]
    human = run_apus("--vault", vault, "memory", "status", env=local_env).stdout
    assert "crashed once during the last sync" in human and "SIGILL" in human
    doctor = json.loads(
        run_apus("--vault", vault, "doctor", "--json", env=local_env, expect=1).stdout
    )
    sync_check = next(check for check in doctor["checks"] if check["name"] == "sync")
    assert not sync_check["ok"] and "SIGILL" in sync_check["detail"]
    for name, value in local_env.items():
        if name.startswith("APUS_"):
            monkeypatch.setenv(name, value)
    with Memory(SettingsSource(vault=vault)) as memory:  # what F4 shows
        screen = status_content(memory.status()).plain
    assert "Crashes" in screen and "SIGILL (illegal instruction)" in screen
    # A sync without a crash clears it.
    index(vault, local_env, expect=0)
    last = json.loads(
        run_apus("--vault", vault, "memory", "status", "--json", env=local_env).stdout
    )["lastSync"]
    assert last["ok"] is True and last["recoveredCrashes"] is None
    run_apus("--vault", vault, "doctor", env=local_env, expect=0)


async def _ask_mcp(vault: Path, env: dict[str, str]) -> tuple[dict, dict]:  # type: ignore[type-arg]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "apus", "--vault", str(vault), "mcp"], env=env
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        status = await session.call_tool("memory_status", {})
        search = await session.call_tool("memory_search", {"query": "hallway closet"})
    assert status.structured_content is not None and search.structured_content is not None
    return status.structured_content, search.structured_content
