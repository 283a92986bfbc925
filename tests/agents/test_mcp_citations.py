"""A search result's citation is an address: memory_get and `apus memory get` read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.mcp_client import agent, call, refused, server_env
from support.vaults import index_vault, run_apus, run_json, write_note

LONG = "# Long\n\n" + "\n".join(f"line {n}" for n in range(3, 301)) + "\n"
# Longer than one page (2,000 lines) a call.
HUGE = "# Huge\n\n" + "\n".join(f"row {n}" for n in range(3, 2501)) + "\n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "notes/long.md", LONG)
    write_note(root, "notes/huge.md", HUGE)
    write_note(root, "notes/c#sharp.md", "# C sharp\n\nA note whose name holds a hash.\n")
    index_vault(root, server_env())
    return root


async def test_memory_get_reads_a_citation(vault: Path) -> None:
    async with agent(vault) as session:
        hit = (await call(session, "memory_search", query="hash"))["results"][0]
        cited = await call(session, "memory_get", path=hit["citation"])
        assert cited["path"] == "notes/c#sharp.md"
        start, end = (int(n) for n in hit["citation"].rsplit("#L", 1)[1].split("-L"))
        assert (cited["from"], cited["lines"]) == (start, end - start + 1)

        window = await call(session, "memory_get", path="notes/long.md#L10-L12")
        assert window["text"] == "line 10\nline 11\nline 12"
        # Read exactly as cited: nothing asked for is missing, though the note goes on.
        assert (window["from"], window["truncated"], window["totalLines"]) == (10, False, 300)
        assert "nextFrom" not in window
        # A cited range longer than a page comes in pages: the rest is still owed.
        first = await call(session, "memory_get", path="notes/huge.md#L1-L2200")
        assert (first["lines"], first["truncated"], first["nextFrom"]) == (2000, True, 2001)
        # A plain path asks for the note: a page of it is truncated while the note goes on.
        opening = await call(session, "memory_get", path="notes/long.md", lines=10)
        assert (opening["truncated"], opening["nextFrom"]) == (True, 11)
        # One line on: a page from there, as long as `lines` says.
        page = await call(session, "memory_get", path="notes/long.md#L299", lines=5)
        assert page["text"] == "line 299\nline 300" and page["truncated"] is False
        # A range past the note's end reads to the end.
        whole = await call(session, "memory_get", path="notes/long.md#L1-L2500")
        assert (whole["lines"], whole["truncated"]) == (300, False)
        # Related notes take a citation too.
        related = await call(session, "memory_related", path=hit["citation"])
        assert "notes/c#sharp.md" not in [r["path"] for r in related["results"]]

        for bad in ("notes/long.md#L0-L3", "notes/long.md#L9-L3", "notes/long.md#L900"):
            text = await refused(session, "memory_get", path=bad)
            assert "Fix:" in text and "pydantic" not in text, text


def test_cli_memory_get_reads_a_citation(vault: Path) -> None:
    env = server_env()
    window = run_json("--vault", vault, "memory", "get", "notes/long.md#L5-L6", "--json", env=env)
    assert (window["text"], window["from"], window["truncated"]) == ("line 5\nline 6", 5, False)
    assert (window["next_from"], window["total_lines"]) == (None, 300)
    plain = run_apus("--vault", vault, "memory", "get", "notes/long.md#L300", env=env)
    assert plain.stdout == "line 300\n"
    gone = run_apus("--vault", vault, "memory", "get", "notes/long.md#L400", env=env, expect=1)
    assert "past the end" in gone.stderr + gone.stdout
