"""Claude Code's and Codex's conversations through `apus mcp` and the SDK's own client: the
transcript tools and memory_search over them, the visibility arguments with their agent
names, and a session the client is still writing, seen by the server's watch."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from support.client_transcripts import (
    CODEX_KEY,
    CODEX_SUBAGENT_KEY,
    KILN_AGENT,
    KILN_FILE,
    KILN_KEY,
    KILN_SUBAGENT_KEY,
    claude_line,
    install,
    installed,
    sessions_env,
)
from support.transcripts import append
from support.vaults import index_vault, write_note

from .test_mcp_server import FRESHNESS_S, agent, call, server_env, watch_live


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "notes/kiln.md", "# Kiln\n\nThe kiln fires at cone six on Sundays.\n")
    install()
    return root


async def test_the_tools_work_on_both_clients_sessions(vault: Path) -> None:
    env = server_env(**sessions_env(APUS_MEMORY__SEARCH__SYNC__WATCH="false"))
    index_vault(vault, env)
    async with agent(vault, env) as session:
        found = (await call(session, "sessions_search", query='"raku firing get"'))["results"]
        assert [(r["sessionKey"], r["role"]) for r in found] == [(KILN_KEY, "user")]
        window = await call(
            session, "sessions_history", sessionKey=KILN_KEY, around=found[0]["timestamp"], limit=3
        )
        assert window["messages"][2]["text"].startswith("Raku firing reaches about 1000 degrees")
        assert window["agentId"] == KILN_AGENT
        codex = await call(session, "sessions_history", sessionKey=CODEX_KEY, limit=2)
        assert [m["text"] for m in codex["messages"]] == [
            "Where is the glaze bucket kept?",
            "Under the wedging table, where the helper found it.",
        ]
        by_meaning = await call(
            session, "memory_search", query="glaze bucket wedging table", corpus="sessions"
        )
        paths = {r["path"] for r in by_meaning["results"]}
        assert {f"sessions:{KILN_KEY}", f"sessions:{CODEX_KEY}"} <= paths
        notes = await call(session, "memory_search", query="kiln cone six")
        assert {r["source"] for r in notes["results"]} == {"memory"}


async def test_an_agent_sees_its_own_sessions_by_its_agent_name(vault: Path) -> None:
    env = server_env(
        **sessions_env(
            APUS_MEMORY__SEARCH__SYNC__WATCH="false", APUS_TOOLS__SESSIONS__VISIBILITY="tree"
        )
    )
    index_vault(vault, env)
    async with agent(vault, env) as client:
        # `session` is an argument of the tools here (who asks), so they are called directly.
        for asker, visible in ((KILN_KEY, {KILN_KEY, KILN_SUBAGENT_KEY}),
                               (CODEX_KEY, {CODEX_KEY, CODEX_SUBAGENT_KEY})):  # fmt: skip
            arguments = {"query": '"wedging table"', "session": asker}
            result = await client.call_tool("sessions_search", arguments)
            assert result.structured_content is not None, result.content
            assert {r["sessionKey"] for r in result.structured_content["results"]} == visible
        hidden = await client.call_tool(
            "sessions_history", {"sessionKey": CODEX_KEY, "session": KILN_KEY}
        )
        assert hidden.is_error
        assert f"No indexed session {CODEX_KEY} is visible here" in str(hidden.content)


async def test_a_session_the_client_is_still_writing_is_found(vault: Path) -> None:
    env = server_env(**sessions_env())  # watching: the clients' folders too
    index_vault(vault, env)
    async with agent(vault, env) as session:
        assert (await call(session, "sessions_search", query="saggars"))["results"] == []
        await watch_live(session)
        tip = "f939ffcd-fd56-4300-abc9-513aa60d0ff9"
        append(
            installed(KILN_FILE),
            claude_line("n1", tip, "user", "How are the saggars stacked?", "2026-12-07T09:00:00Z"),
        )
        deadline = time.monotonic() + FRESHNESS_S
        while True:
            found = (await call(session, "sessions_search", query="saggars"))["results"]
            if [r["sessionKey"] for r in found] == [KILN_KEY]:
                break
            assert time.monotonic() < deadline, "the append never reached search"
            await asyncio.sleep(0.3)
