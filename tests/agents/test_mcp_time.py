"""Time in the agent's words: since/until in relative forms, and a time in the query read as
a window over dated notes, reported as `timeWindow`; an explicit filter wins."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents.mcp_client import agent, call, refused, server_env, text_of
from support.vaults import index_vault, run_apus, run_json, write_note

TODAY = "2026-12-02"  # a Wednesday; last week is 2026-11-23 .. 2026-11-29
NOTES = {
    "daily/2026-11-24.md": "# Tuesday\n\nDecided: the VPN moves to WireGuard.\n",
    "daily/2026-11-10.md": "# Older\n\nVPN: still on OpenVPN, decide later.\n",
    "daily/2026-05-12.md": "# May\n\nThe VPN contract was signed.\n",
    "daily/2026-12-01.md": "# Yesterday\n\nRouter firmware updated.\n",
    "notes/vpn.md": "# VPN\n\nHow the VPN is set up.\n",
}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(root, rel, text)
    os.utime(root / "notes/vpn.md", (1_600_000_000, 1_600_000_000))  # undated, from 2020
    index_vault(root, server_env())
    return root


def _paths(answer: dict[str, object]) -> list[str]:
    return [hit["path"] for hit in answer["results"]]  # type: ignore[attr-defined, index]


async def test_a_time_in_the_query_is_a_window(vault: Path) -> None:
    async with agent(vault, server_env(APUS_TODAY=TODAY)) as session:
        asked = "what did I decide last week about the VPN"
        answer = await call(session, "memory_search", query=asked)
        assert _paths(answer) == ["daily/2026-11-24.md"]
        assert answer["timeWindow"] == {
            "since": "2026-11-23",
            "until": "2026-11-29",
            "text": "last week",
            "source": "query",
        }
        may = await call(session, "memory_search", query="VPN in May")
        assert _paths(may) == ["daily/2026-05-12.md"]
        day = await call(session, "memory_search", query="VPN on 2026-11-10")
        assert _paths(day) == ["daily/2026-11-10.md"]
        text = await text_of(session, "memory_search", query=asked)
        assert "Time window (query: 'last week'): 2026-11-23 to 2026-11-29" in text
        plain = await call(session, "memory_search", query="VPN")
        assert "timeWindow" not in plain and len(_paths(plain)) == 4


async def test_since_until_in_relative_forms_and_the_explicit_filter_wins(vault: Path) -> None:
    async with agent(vault, server_env(APUS_TODAY=TODAY)) as session:
        recent = await call(session, "memory_search", query="VPN", since="2w")
        assert _paths(recent) == ["daily/2026-11-24.md"]
        assert recent["timeWindow"]["source"] == "arguments"
        month = await call(session, "memory_search", query="VPN", since="last month")
        assert sorted(_paths(month)) == ["daily/2026-11-10.md", "daily/2026-11-24.md"]
        # The query says May; the filter says last month: the filter is what holds.
        won = await call(session, "memory_search", query="VPN in May", since="last month")
        assert "daily/2026-05-12.md" not in _paths(won)
        assert won["timeWindow"]["text"] == "since=last month"
        old = await call(session, "memory_search", query="firmware", until="yesterday")
        assert _paths(old) == ["daily/2026-12-01.md"]

        for bad in ({"since": "soonish"}, {"until": "the blue one"}):
            text = await refused(session, "memory_search", query="VPN", **bad)
            assert "names no date" in text and "last week" in text and "Fix:" in text
        swapped = await refused(session, "memory_search", query="VPN", since="today", until="7d")
        assert "after `until`" in swapped


async def test_an_empty_window_read_from_the_query_says_so(vault: Path) -> None:
    async with agent(vault, server_env(APUS_TODAY=TODAY)) as session:
        answer = await call(session, "memory_search", query="router firmware last month")
        assert _paths(answer) == ["daily/2026-12-01.md"]
        assert answer["notices"] == [
            "nothing dated 2026-11-01 to 2026-11-30; these are from any date"
        ]


def test_cli_since_takes_relative_forms(vault: Path) -> None:
    env = server_env(APUS_TODAY=TODAY)
    found = run_json(
        "--vault", vault, "memory", "search", "VPN", "--since", "2w", "--json", env=env
    )
    assert [hit["path"] for hit in found["results"]] == ["daily/2026-11-24.md"]
    bad = run_apus(
        "--vault", vault, "memory", "search", "VPN", "--since", "soonish", env=env, expect=2
    )
    assert "names no date" in bad.stderr
