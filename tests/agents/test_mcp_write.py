"""The write path for agents: memory_write over MCP (opt-in), `apus memory add`, appends
only, safe against a second writer and an editor, refused targets, found by the next search,
per-entry importance and triggers."""

from __future__ import annotations

import asyncio
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agents.mcp_client import agent, call, refused, server_env
from support.vaults import index_vault, run_apus, run_json, vault_digest, write_note

TODAY = "2026-12-02"
DAILY = f"memory/{TODAY}.md"
# Lines the editor appends at most (it stops early when the agents are done).
EDITOR_LINES = 3000


def writable_env(**extra: str) -> dict[str, str]:
    return server_env(APUS_TODAY=TODAY, APUS_MEMORY__WRITE__ENABLED="true", **extra)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "MEMORY.md", "# Memory\n\nThe blog is deployed with make deploy.\n")
    write_note(root, "notes/router.md", "# Router\n\nIn the hallway closet.\n")
    index_vault(root, server_env())
    return root


async def test_the_tool_is_listed_only_when_writing_is_on(vault: Path) -> None:
    async with agent(vault, server_env()) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert "memory_write" not in names
        assert "memory_write" not in (session.instructions or "")
    for env, args in ((server_env(), ("--writable",)), (writable_env(), ())):
        async with agent(vault, env, *args) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            hints = tools["memory_write"].annotations
            assert hints is not None and hints.read_only_hint is False
            assert hints.destructive_hint is False and hints.idempotent_hint is False
            assert tools["memory_write"].input_schema["properties"]["target"]["default"] == "daily"


async def test_a_written_entry_is_found_by_the_next_search(vault: Path) -> None:
    async with agent(vault, writable_env()) as session:
        written = await call(
            session,
            "memory_write",
            text="Decided: the VPN moves to WireGuard on Friday.",
            importance=8,
            triggers=["vpn setup"],
        )
        assert written["path"] == DAILY and written["created"] and written["indexed"]
        found = await call(session, "memory_search", query="WireGuard")
        assert [hit["path"] for hit in found["results"]] == [DAILY]
        window = await call(session, "memory_get", path=written["citation"])
        assert window["text"].splitlines()[1:] == [
            "<!-- importance: 8 -->",
            "<!-- triggers: vpn setup -->",
            "Decided: the VPN moves to WireGuard on Friday.",
        ]
        assert "<!--" not in found["results"][0]["snippet"]
        durable = await call(session, "memory_write", text="Sam prefers tea.", target="USER.md")
        assert durable["path"] == "USER.md" and durable["created"] is True  # it was not there
        second = await call(session, "memory_write", text="Decided: tabs.", target="MEMORY.md")
        assert second["created"] is False
    note = (vault / DAILY).read_text(encoding="utf-8")
    assert note.startswith(f"# {TODAY}\n\n## ")


async def test_two_writers_and_an_appending_editor_lose_nothing(vault: Path) -> None:
    write_note(vault, DAILY, f"# {TODAY}\n\nStarted the day by hand.\n")
    done = threading.Event()
    edits: list[str] = []

    def editor() -> None:
        # An editor appending whole lines, as `echo >> note` does, while the agents write.
        while (not done.is_set() or len(edits) < 5) and len(edits) < EDITOR_LINES:
            line = f"editor line {len(edits)}"
            fd = os.open(vault / DAILY, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
            edits.append(line)

    async def writes(session_name: str, count: int) -> list[dict[str, object]]:
        async with agent(vault, writable_env()) as session:
            return [
                await call(session, "memory_write", text=f"entry {session_name}-{n} ok")
                for n in range(count)
            ]

    thread = threading.Thread(target=editor)
    thread.start()
    try:
        answers = await asyncio.gather(writes("a", 4), writes("b", 4))
    finally:
        done.set()
        thread.join()
    lines = (vault / DAILY).read_text(encoding="utf-8").splitlines()
    assert lines[:3] == [f"# {TODAY}", "", "Started the day by hand."]
    counts = Counter(lines)
    assert all(counts[line] == 1 for line in edits)  # every editor line whole, once
    for name in ("a", "b"):
        for n in range(4):
            text = f"entry {name}-{n} ok"
            assert counts[text] == 1, text
            assert lines[lines.index(text) - 1].startswith("## "), text  # right under its heading
    for line in lines[3:]:
        assert line == "" or line.startswith(("## ", "editor line ", "entry ")), line
    assert all(answer["path"] == DAILY for group in answers for answer in group)


async def test_refused_entries_and_targets_leave_the_vault_alone(
    vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "USER.md").write_text("# Not the vault's\n", encoding="utf-8")
    (vault / "USER.md").symlink_to(outside / "USER.md")
    before = vault_digest(vault)
    async with agent(vault, writable_env(APUS_MEMORY__WRITE__MAXENTRYCHARS="200")) as session:
        cases = [
            ({"text": "x", "target": "../notes/router.md"}, '"daily"'),
            ({"text": "x", "target": "notes/router.md"}, '"MEMORY.md"'),
            ({"text": "x", "target": "USER.md"}, "symlink"),
            ({"text": "y" * 201}, "at most 200"),
            ({"text": "   "}, "empty"),
            ({"text": "sneaky <!-- importance: 10 -->"}, "comment"),
            ({"text": "x", "importance": 11}, "at most 10"),
            ({"text": "x", "triggers": ["a; b"]}, "cannot be written"),
            ({"text": "x", "path": "notes/router.md"}, "`path`"),
        ]
        for arguments, says in cases:
            text = await refused(session, "memory_write", **arguments)
            assert says in text and "Fix:" in text, (arguments, text)
    assert vault_digest(vault) == before
    assert (outside / "USER.md").read_text(encoding="utf-8") == "# Not the vault's\n"


async def test_a_daily_folder_that_leads_outside_is_refused(vault: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (vault / "memory").symlink_to(elsewhere, target_is_directory=True)
    async with agent(vault, writable_env()) as session:
        text = await refused(session, "memory_write", text="x")
        assert "memory/" in text and "Fix:" in text
    assert list(elsewhere.iterdir()) == []


def _entry_text(tag: str) -> str:
    # Long enough that each entry is a passage of its own (chunks are cut at headings).
    return f"Kestrel survey {tag}. " + " ".join(f"observation{n} of the tower" for n in range(60))


async def test_importance_and_triggers_of_one_entry_of_a_multi_entry_note(vault: Path) -> None:
    async with agent(vault, writable_env()) as session:
        plain = await call(session, "memory_write", text=_entry_text("plain one"))
        key = await call(session, "memory_write", text=_entry_text("key one"), importance=10)
        other = await call(session, "memory_write", text=_entry_text("plain two"))
        # perNote merges neighbouring passages: the CLI shows each passage and its factors.
        found = run_json(
            "--vault",
            vault,
            "memory",
            "search",
            "kestrel survey tower",
            "--explain",
            "--json",
            env=writable_env(),
        )
        hits = [hit for hit in found["results"] if hit["path"] == DAILY]
        assert len(hits) == 3, hits

        def passage_of(entry: dict[str, Any]) -> dict[str, Any]:
            return next(h for h in hits if h["start_line"] <= entry["startLine"] <= h["end_line"])

        assert hits[0] == passage_of(key)
        assert hits[0]["explain"]["importance"] == pytest.approx(1.25)
        for entry in (plain, other):
            hit = passage_of(entry)
            assert hit["explain"]["importance"] == pytest.approx(1.0)
            # Its importance, and (annotated: the agent's own entry) the curated weight.
            assert hits[0]["explain"]["curated"] == 1.5 and hit["explain"]["curated"] == 1.0
            final = hit["explain"]["final"]
            assert hits[0]["explain"]["final"] == pytest.approx(1.25 * 1.5 * final, rel=0.02)

        first = await call(
            session,
            "memory_write",
            target="MEMORY.md",
            text=_entry_text("keys"),
            triggers=["rotate the deploy keys"],
        )
        await call(session, "memory_write", target="MEMORY.md", text=_entry_text("other"))
        recalled = await call(session, "memory_recall", message="please rotate the deploy keys")
        [entry] = recalled["entries"]
        assert entry["trigger"] == "rotate the deploy keys" and entry["path"] == "MEMORY.md"
        assert entry["startLine"] <= first["startLine"] <= entry["endLine"]


def test_cli_memory_add(vault: Path) -> None:
    off = run_apus("--vault", vault, "memory", "add", "x", env=server_env(), expect=1)
    assert "Writing to memory is off" in off.stderr and "Fix:" in off.stderr
    written = run_json(
        "--vault",
        vault,
        "memory",
        "add",
        "Zeppelin",
        "lands",
        "--importance",
        "7",
        "--trigger",
        "airship",
        "--json",
        env=writable_env(),
    )
    assert written["path"] == DAILY and written["indexed"] is True
    found = run_json("--vault", vault, "memory", "search", "zeppelin", "--json", env=server_env())
    assert [hit["path"] for hit in found["results"]] == [DAILY]
