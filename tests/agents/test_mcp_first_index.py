"""A search during the first index of a large vault says that notes are still being read."""

from __future__ import annotations

from pathlib import Path

from agents.mcp_client import agent, call, server_env
from integration.helpers import write_note

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
