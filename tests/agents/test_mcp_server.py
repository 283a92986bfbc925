"""`apus mcp` driven as an agent drives it: the SDK's own client over stdio, a real server."""

from __future__ import annotations

import asyncio
import time
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession

from agents.mcp_client import agent as client_agent
from agents.mcp_client import call, refused
from agents.mcp_client import server_env as client_env
from support.holds import Hold
from support.ports import refusing_port
from support.vaults import index_vault, run_apus, write_note

NOTES = {
    "MEMORY.md": "---\ntriggers:\n  - deploy the blog\n---\n# Memory\n\n## Blog\n\n"
    "Deploy the blog with `make deploy` from ~/src/blog; the router must be up for it.\n",
    "notes/router.md": "# Router\n\nThe router lives in the hallway closet; admin password in "
    "the password manager under `gateway-host`.\n",
    "notes/garden.md": "---\ntags: [home]\n---\n# Garden\n\nTomatoes and basil on the balcony.\n",
    "daily/2026-11-20.md": "# Friday\n\nAsked Sam about JIRA-4821; the fix ships Monday.\n",
}
TOOLS = {
    "memory_search",
    "memory_get",
    "memory_related",
    "memory_recall",
    "memory_status",
    "sessions_search",
    "sessions_history",
}
# Only a guard against a hang (debounce + sync on a busy machine): nothing here measures speed.
FRESHNESS_S = 120.0


def server_env(**extra: str) -> dict[str, str]:
    """These tests watch the vault: edits while the server runs are part of what they test."""
    return client_env(watch=True, **extra)


def agent(
    vault: Path, env: dict[str, str] | None = None
) -> AbstractAsyncContextManager[ClientSession]:
    """`apus --vault VAULT mcp`, watching, with an initialised client session."""
    return client_agent(vault, env or server_env())


async def watch_live(session: ClientSession) -> None:
    """Wait until the server says its watch is installed: an edit from now on is seen."""
    deadline = time.monotonic() + FRESHNESS_S
    while not (await call(session, "memory_status"))["watching"]:
        assert time.monotonic() < deadline, "the server never said its watch was installed"
        await asyncio.sleep(0.05)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(root, rel, text)
    env = server_env()
    index_vault(root, env)
    return root


async def test_tools_schemas_and_instructions(vault: Path) -> None:
    async with agent(vault) as session:
        listed = (await session.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        schemas = {tool.name: tool for tool in listed}
        search_args = schemas["memory_search"].input_schema["properties"]
        assert {
            "query",
            "maxResults",
            "minScore",
            "corpus",
            "paths",
            "since",
            "until",
            "tags",
        } <= set(search_args)
        assert set(schemas["memory_get"].input_schema["properties"]) == {"path", "from", "lines"}
        result_fields = schemas["memory_search"].output_schema["properties"]
        assert {"results", "provider", "model", "mode", "fallback", "debug"} <= set(result_fields)
        text = session.instructions or ""
        assert str(vault) in text and "4 notes" in text
        assert all(name in text for name in TOOLS)


async def test_every_tool_on_a_known_vault(vault: Path) -> None:
    async with agent(vault) as session:
        found = await call(session, "memory_search", query="JIRA-4821")
        assert found["mode"] == "keyword" and found["provider"] == "none"
        # Embeddings are off by choice: nothing fell back, nothing to debug.
        # Embeddings are off by choice: nothing fell back, nothing to debug.
        assert "fallback" not in found and found["debug"] == {}
        first = found["results"][0]
        assert first["path"] == "daily/2026-11-20.md"
        assert first["citation"] == "daily/2026-11-20.md#L1-L3"
        assert first["source"] == "memory"
        tagged = await call(session, "memory_search", query="balcony", tags=["home"])
        assert [hit["path"] for hit in tagged["results"]] == ["notes/garden.md"]
        dated = await call(session, "memory_search", query="Sam", since="2026-11-01")
        assert [hit["path"] for hit in dated["results"]] == ["daily/2026-11-20.md"]
        none = await call(session, "memory_search", query="JIRA-4821", paths=["notes/"])
        assert none["results"] == []

        page = await call(session, "memory_get", path="notes/router.md", lines=1)
        assert page == {
            "path": "notes/router.md",
            "text": "# Router",
            "from": 1,
            "lines": 1,
            "totalLines": 3,
            "truncated": True,
            "nextFrom": 2,
        }
        rest = await call(session, "memory_get", path="notes/router.md", **{"from": 3})
        assert "gateway-host" in rest["text"] and rest["truncated"] is False

        # Without vectors, the notes that share the note's title: only MEMORY.md names the
        # router, and the note itself is left out.
        related = await call(session, "memory_related", path="notes/router.md")
        assert [hit["path"] for hit in related["results"]] == ["MEMORY.md"]
        recall = await call(session, "memory_recall", message="please deploy the blog")
        assert [entry["trigger"] for entry in recall["entries"]] == ["deploy the blog"]
        status = await call(session, "memory_status")
        assert (status["files"], status["embeddings"]["state"]) == (4, "off")
        bad_date = await refused(session, "memory_search", query="x", since="soonish")
        assert "YYYY-MM-DD" in bad_date


async def test_memory_get_refuses_escapes(vault: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nnot for agents\n", encoding="utf-8")
    (vault / "notes" / "link.md").symlink_to(secret)
    # Hidden folders are never indexed, even by the sync the server runs when it starts.
    write_note(vault, ".drafts/unindexed.md", "# Draft\n\nnot for agents either\n")
    (vault / "notes" / "router.txt").write_text("plain text\n", encoding="utf-8")
    async with agent(vault, server_env(APUS_MEMORY__SEARCH__SYNC__WATCH="false")) as session:
        for path in (
            "../secret.md",
            str(secret),
            "/etc/passwd",
            "notes/link.md",
            ".drafts/unindexed.md",
            "notes/router.txt",
        ):
            text = await refused(session, "memory_get", path=path)
            assert "Fix:" in text and "not for agents" not in text, text


async def test_a_note_edited_while_the_server_runs_is_found(vault: Path) -> None:
    async with agent(vault) as session:
        assert (await call(session, "memory_search", query="zeppelin"))["results"] == []
        await watch_live(session)
        write_note(vault, "notes/airship.md", "# Airship\n\nThe zeppelin lands at noon.\n")
        deadline = time.monotonic() + FRESHNESS_S
        while True:
            hits = (await call(session, "memory_search", query="zeppelin"))["results"]
            if [hit["path"] for hit in hits] == ["notes/airship.md"]:
                break
            assert time.monotonic() < deadline, "the edit never reached search"
            await asyncio.sleep(0.3)


async def test_an_unavailable_explicit_provider_is_an_answer_not_a_crash(vault: Path) -> None:
    with refusing_port() as port:
        env = server_env(
            APUS_MEMORY__SEARCH__PROVIDER="openai-compatible",
            APUS_MEMORY__SEARCH__MODEL="some-model",
            APUS_MEMORY__SEARCH__REMOTE__BASEURL=f"http://127.0.0.1:{port}/v1",
            APUS_MEMORY__SEARCH__REMOTE__TIMEOUTSECONDS="2",
            APUS_MEMORY__SEARCH__SYNC__WATCH="false",
        )
        async with agent(vault, env) as session:
            answer = await call(session, "memory_search", query="router")
            assert answer["results"] == [] and answer["unavailable"] is True
            assert "unavailable" in answer["error"] and answer["action"]
            # The keyword index is still read: get and status answer.
            assert (await call(session, "memory_get", path="notes/router.md"))["lines"] == 3
            status = await call(session, "memory_status")
            assert status["embeddings"]["state"] == "unavailable"
            assert status["watching"] is False  # watch = false: edits wait for a sync


async def test_a_missing_local_model_falls_back_to_keyword_and_says_why(
    vault: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-model.gguf"
    env = server_env(
        APUS_MEMORY__SEARCH__PROVIDER="local",
        APUS_MEMORY__SEARCH__LOCAL__MODELPATH=str(missing),
        APUS_MEMORY__SEARCH__SYNC__WATCH="false",
    )
    async with agent(vault, env) as session:
        found = await call(session, "memory_search", query="router")
    # Search by words answers, and says why meaning did not, and what to do about it.
    assert found["mode"] == "keyword" and found["provider"] == "local"
    assert [hit["path"] for hit in found["results"]] == ["notes/router.md", "MEMORY.md"]
    reason = f"memory.search.local.modelPath {missing} does not exist"
    assert found["fallback"] == {
        "reason": reason,
        "fix": "set memory.search.local.modelPath to a GGUF embedding model (or clear it)",
    }
    assert found["debug"] == {"embeddingBootstrap": reason}


async def test_the_server_rebuilds_unprefixed_vectors_in_its_queue_and_answers_by_words(
    vault: Path, tiny_model: Path, tmp_path: Path
) -> None:
    local = {
        "APUS_MEMORY__SEARCH__PROVIDER": "local",
        "APUS_MEMORY__SEARCH__LOCAL__MODELPATH": str(tiny_model),
        "APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE": "512",
        "APUS_MEMORY__SEARCH__SYNC__WATCH": "false",
    }
    # Vectors embedded before task prefixes existed; today's settings take them from the GGUF.
    old = server_env(**local, APUS_MEMORY__SEARCH__LOCAL__PREFIXSCHEME="none")
    run_apus("--vault", vault, "memory", "index", env=old)
    hold = Hold(tmp_path / "hold")  # the server's rebuild stops before its first vectors
    async with agent(vault, server_env(**local, **hold.env("embed:0"))) as session:
        while hold.held() is None:
            await asyncio.sleep(0.02)
        status = await call(session, "memory_status")
        assert status["embeddings"]["state"] == "rebuilding"
        during = await call(session, "memory_search", query="router closet")
        assert during["mode"] == "keyword"
        assert [hit["path"] for hit in during["results"]][:1] == ["notes/router.md"]
        assert during["fallback"]["reason"] == (
            "embeddings are being built (0%); keyword results meanwhile"
        )
        hold.release()
        deadline = time.monotonic() + FRESHNESS_S
        while (await call(session, "memory_status"))["embeddings"]["state"] != "ready":
            assert time.monotonic() < deadline, "the server's rebuild never finished"
            await asyncio.sleep(0.1)
        after = await call(session, "memory_search", query="router closet")
        assert after["mode"] == "hybrid" and "fallback" not in after
    # It ran in the server's own queue: one process did every sync, no other was started.
    points = hold.events()
    assert len({p["pid"] for p in points}) == 1 and points[-1]["phase"] == "end"
    assert "embed" in {p["phase"] for p in points}


async def test_two_servers_on_one_vault(vault: Path) -> None:
    async with agent(vault) as first, agent(vault) as second:
        await watch_live(first)
        await watch_live(second)
        write_note(vault, "notes/kayak.md", "# Kayak\n\nPaddled the Biesbosch.\n")
        deadline = time.monotonic() + FRESHNESS_S
        while True:
            answers = [
                await call(session, "memory_search", query="Biesbosch")
                for session in (first, second)
            ]
            if all([hit["path"] for hit in a["results"]] == ["notes/kayak.md"] for a in answers):
                break
            assert time.monotonic() < deadline, answers
            await asyncio.sleep(0.3)
        statuses = [await call(session, "memory_status") for session in (first, second)]
        assert {status["files"] for status in statuses} == {5}
