"""The transcript tools of `apus mcp` through the SDK's own client: sessions_search,
sessions_history, and memory_search over transcripts with the asker's visibility."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from support.transcripts import (
    append,
    conversation,
    enabled_env,
    lines,
    transcript_path,
    write_transcript,
)
from support.vaults import index_vault, write_note

from .test_mcp_server import FRESHNESS_S, agent, call, refused, server_env, watch_live


async def call_args(client: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`call` for arguments named like its own parameters (`session`)."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    vault, agents = tmp_path / "vault", tmp_path / "agents"
    write_note(vault, "notes/router.md", "# Router\n\nThe router password is in the manager.\n")
    write_transcript(
        agents,
        "main/a1",
        conversation("main/a1", [("What is the router password?", "Check the vault entry.")]),
    )
    write_transcript(
        agents,
        "helper/h1",
        conversation("helper/h1", [("router firmware version?", "4.2.1")], day="2026-11-21"),
    )
    return vault, agents


def env_for(agents: Path, visibility: str = "all") -> dict[str, str]:
    return server_env(
        **enabled_env(agents, APUS_TOOLS__SESSIONS__VISIBILITY=visibility),
        APUS_MEMORY__SEARCH__SYNC__WATCH="false",
    )


async def test_schemas_and_instructions(world: tuple[Path, Path]) -> None:
    vault, agents = world
    index_vault(vault, env_for(agents))
    async with agent(vault, env_for(agents)) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert {"sessions_search", "sessions_history"} <= set(tools)
        assert set(tools["sessions_search"].input_schema["properties"]) == {
            "query",
            "agent",
            "session",
            "maxResults",
        }
        assert set(tools["sessions_history"].input_schema["properties"]) == {
            "sessionKey",
            "around",
            "limit",
            "agent",
            "session",
        }
        assert {"agent", "session", "corpus"} <= set(
            tools["memory_search"].input_schema["properties"]
        )
        assert "2 earlier conversations" in (session.instructions or "")


async def test_search_history_and_corpus(world: tuple[Path, Path]) -> None:
    vault, agents = world
    index_vault(vault, env_for(agents))
    async with agent(vault, env_for(agents)) as session:
        found = await call(session, "sessions_search", query="router")
        results = found["results"]
        assert [r["sessionKey"] for r in results] == ["helper/h1", "main/a1"]  # newest first
        assert set(results[0]) == {"sessionKey", "timestamp", "role", "excerpt", "line"}
        hit = results[1]
        window = await call(
            session, "sessions_history", sessionKey=hit["sessionKey"], around=hit["timestamp"]
        )
        assert window["sessionKey"] == "main/a1" and window["total"] == 2
        assert [m["role"] for m in window["messages"]] == ["user", "assistant"]
        assert window["messages"][1]["text"] == "Check the vault entry."
        assert window["from"] == 0 and window["moreAfter"] is False

        notes = await call(session, "memory_search", query="router password")
        assert {r["source"] for r in notes["results"]} == {"memory"}
        everything = await call(session, "memory_search", query="router password", corpus="all")
        assert {r["source"] for r in everything["results"]} == {"memory", "sessions"}
        transcript = next(r for r in everything["results"] if r["source"] == "sessions")
        assert transcript["path"] == "sessions:main/a1"
        text = await refused(session, "memory_get", path=transcript["citation"])
        assert "sessions_history" in text and "main/a1" in text


async def test_visibility_arguments(world: tuple[Path, Path]) -> None:
    vault, agents = world
    env = env_for(agents, visibility="agent")
    index_vault(vault, env)
    async with agent(vault, env) as session:
        mine = await call(session, "sessions_search", query="router", agent="main")
        assert [r["sessionKey"] for r in mine["results"]] == ["main/a1"]
        by_meaning = await call_args(
            session,
            "memory_search",
            {"query": "router", "corpus": "sessions", "session": "main/a1"},
        )
        assert [r["path"] for r in by_meaning["results"]] == ["sessions:main/a1"]
        text = await refused(session, "sessions_history", sessionKey="helper/h1", agent="main")
        assert "No indexed session helper/h1 is visible here" in text and "4.2.1" not in text
        anonymous = await refused(session, "sessions_search", query="router")
        assert "tools.sessions.visibility is 'agent'" in anonymous and "Fix:" in anonymous
        # Notes need no asker.
        notes = await call(session, "memory_search", query="router")
        assert [r["path"] for r in notes["results"]] == ["notes/router.md"]


async def test_transcript_tools_say_how_to_turn_them_on(world: tuple[Path, Path]) -> None:
    vault, _agents = world
    env = server_env(APUS_MEMORY__SEARCH__SYNC__WATCH="false")
    index_vault(vault, env)
    async with agent(vault, env) as session:
        text = await refused(session, "sessions_search", query="router")
        assert "not indexed" in text and "sessionMemory" in text
        assert "not indexed" in (session.instructions or "")
        # Not an empty answer, which would read as "nothing about it": not searched, and why.
        off = await refused(session, "memory_search", query="router", corpus="sessions")
        assert "not indexed" in off and "sessionMemory" in off and "Fix:" in off
        notes = await call(session, "memory_search", query="router", corpus="all")
        assert {hit["source"] for hit in notes["results"]} == {"memory"}


async def test_a_conversation_growing_while_the_server_runs_is_found(
    world: tuple[Path, Path],
) -> None:
    vault, agents = world
    env = server_env(**enabled_env(agents))  # watching, 200 ms debounce
    index_vault(vault, env)
    async with agent(vault, env) as session:
        assert (await call(session, "sessions_search", query="teapot"))["results"] == []
        await watch_live(session)
        exchange = conversation("main/a1", [("Which teapot glaze?", "Tenmoku.")], first=2)
        append(transcript_path(agents, "main/a1"), lines(exchange))
        deadline = time.monotonic() + FRESHNESS_S
        while True:
            found = (await call(session, "sessions_search", query="teapot"))["results"]
            if [r["sessionKey"] for r in found] == ["main/a1"]:
                break
            assert time.monotonic() < deadline, "the append never reached search"
            await asyncio.sleep(0.3)
