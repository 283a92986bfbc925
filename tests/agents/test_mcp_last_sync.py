"""A failing background sync of `apus mcp` is state: `memory_status` names it (`lastSync`),
and the server recovers by itself once the cause is gone. Driven through the SDK's client
over stdio; the faults are real (a note with huge integers, a database that refuses)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from agents.test_mcp_server import FRESHNESS_S, agent, call, server_env
from apus.config import load_settings
from support.vaults import index_vault, write_note

HUGE = (
    "---\nimportance: 1" + "0" * 400 + "\ntags: [0x" + "f" * 4000 + "]\n---\n# Odd\n\nOdd note.\n"
)
REFUSE = (
    "CREATE TRIGGER refuse_insert BEFORE INSERT ON meta BEGIN "
    "SELECT RAISE(ABORT, 'injected: the index refuses writes'); END;"
    "CREATE TRIGGER refuse_update BEFORE UPDATE ON meta BEGIN "
    "SELECT RAISE(ABORT, 'injected: the index refuses writes'); END;"
)


async def _until(
    session: ClientSession, check: Any, what: str, limit_s: float = FRESHNESS_S
) -> dict[str, Any]:
    """memory_status, asked again until `check` holds (the server's own state is the signal)."""
    deadline = time.monotonic() + limit_s
    while True:
        status = await call(session, "memory_status")
        if check(status):
            return status
        assert time.monotonic() < deadline, f"{what}: {status}"
        await asyncio.sleep(0.2)


async def _found(session: ClientSession, query: str) -> list[str]:
    return [hit["path"] for hit in (await call(session, "memory_search", query=query))["results"]]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "notes/router.md", "# Router\n\nThe router lives in the hallway closet.\n")
    index_vault(root, server_env())
    return root


def _database(vault: Path) -> Path:
    settings = load_settings(overrides={"vault": str(vault)})
    return settings.index_dir() / "apus.sqlite"


async def test_huge_integers_arriving_live_then_a_refusing_index(vault: Path) -> None:
    async with agent(vault) as session:
        # One note of huge integers arrives with a good one: both are indexed, the odd one
        # without its bad fields, and listed with the reason.
        write_note(vault, "odd.md", HUGE)
        write_note(vault, "notes/kayak.md", "# Kayak\n\nPaddled the Biesbosch.\n")
        status = await _until(
            session, lambda s: {p["path"] for p in s["problems"]} == {"odd.md"}, "odd note"
        )
        assert await _found(session, "Biesbosch") == ["notes/kayak.md"]
        assert await _found(session, "odd") == ["odd.md"]
        (problem,) = status["problems"]
        assert "`importance` left out" in problem["reason"] and problem["indexed"] is True
        assert status["lastSync"]["ok"] is True

        # The database refuses every write: the next sync fails, and that is the state.
        database = sqlite3.connect(_database(vault))
        with database:
            database.executescript(REFUSE)
        write_note(vault, "notes/canoe.md", "# Canoe\n\nThe canoe is in the Ardennes.\n")
        failed = await _until(session, lambda s: s["lastSync"]["ok"] is False, "failure")
        assert "injected: the index refuses writes" in failed["lastSync"]["error"]
        assert failed["lastSync"]["fix"] and failed["lastSync"]["at"]
        assert await _found(session, "Biesbosch") == ["notes/kayak.md"]  # the old index serves

        # The cause goes away; the queue's own retry brings the new note in.
        with database:
            database.executescript("DROP TRIGGER refuse_insert; DROP TRIGGER refuse_update;")
        database.close()
        # (Retries wait 2 s, doubled per failure: a few failures in, that is some seconds.)
        await _until(session, lambda s: s["lastSync"]["ok"] is True, "recovery", 90.0)
        assert await _found(session, "Ardennes") == ["notes/canoe.md"]
