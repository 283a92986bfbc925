"""Answers true from the server's first millisecond: from the moment it knows it will sync,
every memory_search answer says the index is being built (starting, reading, writing the
keyword index, embedding) until it covers the vault; memory_status says this server builds
it; a restart over a complete index says nothing about indexing unless a note changed.

Each sync is held by the sync hook at a known point of its work (never timed), so what the
agent sees is the same on any machine.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp.client.session import ClientSession

from agents.mcp_client import agent, call, server_env, text_of
from support.holds import Hold
from support.vaults import index_vault, write_note

NOTES = 3000


def _vault(root: Path, notes: int = NOTES) -> Path:
    for n in range(notes):
        write_note(root, f"notes/n{n:05d}.md", f"# Note {n}\n\nThe heron count was {n}.\n")
    return root


async def _until_indexed(session: ClientSession) -> dict[str, object]:
    """memory_status once the server says the index covers the vault (its own signal)."""
    while "indexing" in (status := await call(session, "memory_status")):
        pass
    return status


async def test_a_search_right_after_initialize_on_an_unindexed_vault_says_indexing(
    tmp_path: Path,
) -> None:
    vault = _vault(tmp_path / "vault", 200)
    hold = Hold(tmp_path / "hold")
    # The server's sync stops at its first point: the writer lock taken, nothing read.
    async with agent(vault, server_env(**hold.env("start:0"))) as session:
        first = await session.call_tool("memory_search", {"query": "heron"})
        answer = first.structured_content or {}
        assert answer["results"] == []
        assert answer["indexing"] == {"phase": "Starting", "done": 0, "total": 0}
        text = first.content[0].text  # type: ignore[union-attr]
        assert "Still indexing: Starting; results may miss notes not read yet" in text
        assert (await anyio.to_thread.run_sync(hold.wait_held))["phase"] == "start"

        status = await call(session, "memory_status")
        assert status["indexed"] is False
        assert status["keyword"].startswith("being built by this server (Starting")
        assert status["keywordIndex"]["ready"] is False
        assert "run `apus memory index`" not in str(status)
        assert status["indexing"]["phase"] == "Starting"

        hold.release()
        status = await _until_indexed(session)
        assert status["files"] == 200 and status["keyword"] == "ready"
        assert status["keywordIndex"] == {"ready": True}
        final = await call(session, "memory_search", query="heron")
        assert final["results"] and "indexing" not in final


async def test_status_during_the_servers_own_first_index(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    hold = Hold(tmp_path / "hold")
    env = server_env(watch=True, **hold.env(f"index:{NOTES}"))
    async with agent(vault, env) as session:
        # Every note is read; what follows is writing most of them into the keyword index.
        read = await anyio.to_thread.run_sync(hold.wait_held)
        status = await call(session, "memory_status")
        indexing = status["indexing"]
        assert (indexing["phase"], indexing["done"], indexing["total"]) == (
            "Reading notes",
            NOTES,
            NOTES,
        )
        assert status["keyword"].startswith("being built by this server (Reading notes 3000")
        assert status["keywordIndex"]["ready"] is False
        while not status["watching"]:  # the watch is installed while the sync is held
            status = await call(session, "memory_status")

        hold.release(read["n"])
        writing = await anyio.to_thread.run_sync(lambda: hold.wait_held(after=read["n"]))
        assert writing["phase"] == "keyword"
        answer = await call(session, "memory_search", query="heron")
        indexing = answer["indexing"]
        assert indexing["phase"] == "Building keyword index"
        assert (indexing["done"], indexing["total"]) == (0, writing["total"])
        hold.release(writing["n"])
        moved = await anyio.to_thread.run_sync(lambda: hold.wait_held(after=writing["n"]))
        answer = await call(session, "memory_search", query="heron")
        assert answer["indexing"]["done"] == moved["done"] > 0  # the count moves

        hold.release()
        status = await _until_indexed(session)
        assert status["files"] == NOTES and status["keywordIndex"] == {"ready": True}
        assert status["watching"] is True


async def test_a_restart_over_a_complete_index_says_nothing_about_indexing(
    tmp_path: Path,
) -> None:
    vault = _vault(tmp_path / "vault", 300)
    index_vault(vault, server_env())
    for point in ("start:0", "scan:0"):  # the lock taken; looking for changes
        hold = Hold(tmp_path / f"hold-{point.replace(':', '-')}")
        async with agent(vault, server_env(**hold.env(point))) as session:
            text = await text_of(session, "memory_search", query="heron")
            await anyio.to_thread.run_sync(hold.wait_held)
            answer = await call(session, "memory_search", query="heron")
            status = await call(session, "memory_status")
            assert "indexing" not in answer and "Still indexing" not in text, point
            assert "indexing" not in status and status["keyword"] == "ready", point
            assert "search by exact words works" in (session.instructions or "")
            hold.release()

    # Unless something changed: then reading it is said, with its count.
    write_note(vault, "notes/new.md", "# New\n\nA heron nests by the weir.\n")
    hold = Hold(tmp_path / "hold-changed")
    async with agent(vault, server_env(**hold.env("index:1"))) as session:
        await anyio.to_thread.run_sync(hold.wait_held)
        answer = await call(session, "memory_search", query="heron weir")
        indexing = answer["indexing"]
        assert (indexing["phase"], indexing["done"], indexing["total"]) == ("Reading notes", 1, 1)
        hold.release()
        await _until_indexed(session)
        answer = await call(session, "memory_search", query="heron weir")
        assert answer["results"][0]["path"] == "notes/new.md" and "indexing" not in answer


async def test_embedding_is_said_and_instructions_say_what_will_happen(
    tmp_path: Path, tiny_model: Path
) -> None:
    vault = _vault(tmp_path / "vault", 40)
    hold = Hold(tmp_path / "hold")
    env = server_env(
        **hold.env("embed:0"),
        APUS_MEMORY__SEARCH__PROVIDER="local",
        APUS_MEMORY__SEARCH__LOCAL__MODELPATH=str(tiny_model),
        APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE="512",
    )
    async with agent(vault, env) as session:
        text = session.instructions or ""
        assert "search by meaning starts as passages are embedded" in text, text
        assert "memory_status tells how far" in text and "0% done" not in text, text
        point = await anyio.to_thread.run_sync(hold.wait_held)
        answer = await call(session, "memory_search", query="heron")
        assert answer["indexing"]["phase"] == "Embedding passages", (answer, point)
        assert answer["indexing"]["total"] == point["total"] == 40, (answer, point)
        said = await text_of(session, "memory_search", query="heron")
        assert "every note is searchable by its words" in said, said
        hold.release()
        status = await _until_indexed(session)
        assert status["embeddings"]["state"] == "ready", status
