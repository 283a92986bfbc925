"""A search during the first index of a large vault says that notes are still being read."""

from __future__ import annotations

from pathlib import Path

import anyio

from agents.mcp_client import agent, call, server_env
from support.holds import Hold
from support.vaults import write_note

NOTES = 3000


async def test_answers_during_a_first_index_carry_indexing(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for n in range(NOTES):
        write_note(vault, f"notes/n{n:05d}.md", f"# Note {n}\n\nThe heron count was {n}.\n")
    seen = []
    async with agent(vault, server_env()) as session:
        # Ask until the server says the index is whole (its own signal, no clock).
        while True:
            result = await session.call_tool("memory_search", {"query": "heron"})
            assert not result.is_error, result.content
            answer = result.structured_content or {}
            status = await call(session, "memory_status")
            if "indexing" in answer:
                seen.append(answer["indexing"])
                assert "Still indexing:" in result.content[0].text  # type: ignore[union-attr]
            if "indexing" not in status and status["files"] == NOTES:
                assert status["keywordIndex"] == {"ready": True}
                break
        final = await call(session, "memory_search", query="heron")
    assert seen, "no answer said the notes were still being read"
    assert all(
        entry["phase"] and entry["done"] <= max(entry["total"], entry["done"]) for entry in seen
    )
    assert "indexing" not in final and final["results"]


async def test_a_first_index_answers_by_words_from_its_first_batch(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for n in range(NOTES):
        write_note(vault, f"notes/n{n:05d}.md", f"# Note {n}\n\nThe heron count was n{n:05d}x.\n")
    hold = Hold(tmp_path / "hold")
    # The server's own sync stops once its first batch (500 notes) is committed.
    async with agent(vault, server_env(**hold.env("index:500"))) as session:
        text = session.instructions or ""
        assert "nothing indexed yet: the notes are being read now" in text
        await anyio.to_thread.run_sync(hold.wait_held)
        status = await call(session, "memory_status")
        assert status["indexing"]["done"] == 500
        stored = await call(session, "memory_search", query="heron", maxResults=200, perNote=1)
        paths = {hit["path"] for hit in stored["results"]}
        assert paths and stored["indexing"]["done"] == 500
        first = sorted(paths)[0]
        exact = await call(session, "memory_search", query=f"{Path(first).stem}x")
        assert [hit["path"] for hit in exact["results"]] == [first]
        assert "indexing" in exact
        hold.release()
        while "indexing" in (status := await call(session, "memory_status")):
            pass  # the server's own signal ends the wait, not a clock
        assert status["files"] == NOTES
