"""What an agent met and should not: recall citing a whole passage of entries, triggers
written where recall never reads them, blank queries answered with nothing, a run-on
maxChars notice; through the SDK client and the CLI alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agents.mcp_client import agent, call, refused, server_env
from support.vaults import index_vault, run_apus, write_note

TODAY = "2026-12-02"


def writable_env() -> dict[str, str]:
    return server_env(APUS_TODAY=TODAY, APUS_MEMORY__WRITE__ENABLED="true")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "notes/kestrel.md", "# Kestrel\n\n" + "A kestrel hovers over the field. " * 40)
    for n in range(12):
        write_note(root, f"notes/n{n:02d}.md", f"# N{n}\n\nA kestrel was seen by the river {n}.\n")
    index_vault(root, server_env())
    return root


async def test_recall_cites_the_entry_whose_trigger_matched(vault: Path) -> None:
    async with agent(vault, writable_env()) as session:
        first = await call(
            session,
            "memory_write",
            text="Decided: the VPN moves to WireGuard on Friday.",
            target="MEMORY.md",
            importance=8,
            triggers=["vpn setup"],
        )
        second = await call(
            session,
            "memory_write",
            text="Sam takes his tea without sugar.",
            target="MEMORY.md",
            triggers=["make tea for Sam"],
        )
        assert "notices" not in first and "notices" not in second
        recalled = await call(session, "memory_recall", message="could you make tea for Sam?")
        (entry,) = recalled["entries"]
        # The entry written second, exactly: not the passage that holds both.
        assert entry["citation"] == second["citation"]
        assert "sugar" in entry["snippet"] and "WireGuard" not in entry["snippet"]
        (vpn,) = (await call(session, "memory_recall", message="help with the vpn setup"))[
            "entries"
        ]
        assert vpn["citation"] == first["citation"]
        assert "WireGuard" in vpn["snippet"] and "sugar" not in vpn["snippet"]


async def test_triggers_written_to_a_daily_note_are_said_to_be_not_recalled(vault: Path) -> None:
    async with agent(vault, writable_env()) as session:
        result = await session.call_tool(
            "memory_write",
            {"text": "Water the ferns on Sundays.", "triggers": ["water the ferns"]},
        )
        answer = result.structured_content or {}
        assert answer["path"] == f"memory/{TODAY}.md"
        (notice,) = answer["notices"]
        assert "MEMORY.md and USER.md" in notice
        assert "Note: its triggers were written" in result.content[0].text  # type: ignore[union-attr]
        # What the notice says: recall does not read them there.
        recalled = await call(session, "memory_recall", message="water the ferns")
        assert recalled["entries"] == []
        plain = await call(session, "memory_write", text="No triggers, no notice.")
        assert "notices" not in plain


async def test_blank_queries_are_refused_with_the_fix(vault: Path) -> None:
    async with agent(vault) as session:
        for tool, arguments in (
            ("memory_search", {"query": ""}),
            ("memory_search", {"query": "  \t "}),
            ("memory_recall", {"message": " "}),
        ):
            text = await refused(session, tool, **arguments)
            assert "is empty" in text and "Fix:" in text, (tool, text)
    env = server_env()
    for args in (("search", "   "), ("recall", "")):
        result = run_apus("--vault", vault, "memory", *args, env=env, expect=1)
        assert "is empty" in result.stderr and "Fix:" in result.stderr, result.stderr


async def test_the_max_chars_notice_reads_as_sentences(vault: Path) -> None:
    async with agent(vault) as session:
        answer = await call(
            session, "memory_search", query="kestrel", maxResults=10, perNote=1, maxChars=900
        )
    (notice,) = answer["notices"]
    assert re.fullmatch(
        r"maxChars 900: \d+ snippets? cut to \d+ characters; \d+ lower passages? left out "
        r"\(ask for fewer, or a larger maxChars\)",
        notice,
    ), notice
