"""Every face asks the session the same question the same way: the CLI, `apus mcp` over stdio
and over HTTP, and the app get the same hits in the same order.

The search rules live in the session (per-note limits and their over-fetch, dates read from
the query and widened when they hold nothing, `since` after `until` refused); a face only
translates its arguments. Where faces offer the same options they must agree exactly: the
app (no per-note limit, no time words) with `apus memory search --no-time-words`, and the
agent tools (perNote 2, time words) with `apus memory search --per-note 2`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from agents.mcp_client import agent, server_env
from agents.mcp_http import http_agent, http_server
from apus.tui.screens.search import SearchScreen
from apus.tui.widgets.results import ResultList
from support.vaults import index_vault, run_apus, run_json, write_note
from tui.factory import SIZE, make_app, settle

TODAY = "2026-12-02"
Hit = tuple[str, int, int]  # path, first line, last line
# A note of many passages about one thing, the ones about coffee apart from each other: a
# per-note limit has passages to drop, not only neighbours to merge.
BREWING = "\n\n".join(
    f"## {section}\n\n{body}\n\nmore words about the kitchen shelf\nand the window sill"
    for section, body in (
        ("V60", "Coffee with the V60: 18 g coffee to 300 g water."),
        ("Kettle", "The kettle is descaled every month."),
        ("Moka", "Coffee from the moka pot, on low heat."),
        ("Grinder", "The grinder sits on the shelf."),
        ("Cold brew", "Cold brew coffee steeps overnight."),
    )
)
NOTES = {
    "MEMORY.md": "# Memory\n\n- Coffee: V60 at 94 °C.\n- The router is in the hallway closet.\n",
    "notes/brewing.md": f"# Brewing\n\n{BREWING}\n",
    "notes/router.md": "# Router\n\nThe router lives in the hallway closet by the modem.\n",
    "daily/2026-11-20.md": "# 20 November\n\nCoffee with Sam at the canal café.\n",
    "daily/2026-11-26.md": "# 26 November\n\nRouter firmware updated; the closet is warm.\n",
    "daily/2026-10-02.md": "# 2 October\n\nBought coffee beans and a new router cable.\n",
}
# (query, its since/until, or none)
QUESTIONS: list[tuple[str, dict[str, str]]] = [
    ("coffee", {}),
    ("router closet", {}),
    ("router last week", {}),  # a time in the words: the dates of last week
    ("coffee last month", {}),
    ("coffee in September", {}),  # nothing dated then: any date, and it says so
    ("coffee", {"since": "2026-11-01", "until": "2026-11-30"}),
    ("router", {"until": "2026-11-01"}),
]
ENV = {
    "APUS_TODAY": TODAY,
    # Small passages: each section of the brewing note is one.
    "APUS_MEMORY__SEARCH__CHUNKING__TOKENS": "40",
    "APUS_MEMORY__SEARCH__CHUNKING__OVERLAP": "0",
    # Recency counts from the machine's clock: off, so that no face sees another day.
    "APUS_MEMORY__SEARCH__QUERY__HYBRID__TEMPORAL_DECAY__ENABLED": "false",
}


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(root, rel, text)
    for name, value in server_env(**ENV).items():
        monkeypatch.setenv(name, value)  # the app runs in this process, with these settings
    index_vault(root, server_env(**ENV))
    return root


def _cli(vault: Path, query: str, dates: dict[str, str], *options: str) -> list[Hit]:
    flags = [arg for name, value in dates.items() for arg in (f"--{name}", value)]
    found = run_json(
        "--vault",
        vault,
        "memory",
        "search",
        query,
        *flags,
        *options,
        "--json",
        env=server_env(**ENV),
    )
    return [(hit["path"], hit["start_line"], hit["end_line"]) for hit in found["results"]]


async def _tool(session: ClientSession, query: str, dates: dict[str, str]) -> dict[str, Any]:
    result = await session.call_tool("memory_search", {"query": query, **dates})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def _hits(answer: dict[str, Any]) -> list[Hit]:
    """Each passage's path and lines, as its citation (`path#L12-L30`) names them."""
    return [_cited(hit["citation"]) for hit in answer["results"]]


def _cited(citation: str) -> Hit:
    path, lines = citation.rsplit("#L", 1)
    first, _, last = lines.partition("-L")
    return path, int(first), int(last or first)


async def _app(vault: Path, queries: list[str]) -> dict[str, list[Hit]]:
    app = make_app(vault, vault.parent / "config.toml")
    shown: dict[str, list[Hit]] = {}
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for query in queries:
            assert isinstance(app.screen, SearchScreen)
            app.screen.query_one("#query").value = query  # type: ignore[attr-defined]
            await settle(pilot)
            hits = app.screen.query_one(ResultList).hits
            shown[query] = [(hit.path, hit.start_line, hit.end_line) for hit in hits]
    return shown


@pytest.mark.slow
async def test_every_face_gets_the_same_hits_in_the_same_order(vault: Path) -> None:
    env = server_env(**ENV)
    agents: list[list[list[Hit]]] = []
    with http_server(vault, env) as server:
        async with agent(vault, env) as stdio, http_agent(server.url) as http:
            for session in (stdio, http):
                answers = [await _tool(session, query, dates) for query, dates in QUESTIONS]
                agents.append([_hits(answer) for answer in answers])
                said = {
                    query: answer.get("notices")
                    for (query, _), answer in zip(QUESTIONS, answers, strict=True)
                }
                assert said["coffee in September"] == [
                    "nothing dated 2026-09-01 to 2026-09-30; these are from any date"
                ]
    over_stdio, over_http = agents
    for number, (query, dates) in enumerate(QUESTIONS):
        expected = _cli(vault, query, dates, "--per-note", "2")
        assert expected, (query, dates)
        assert over_stdio[number] == expected, (query, dates)
        assert over_http[number] == expected, (query, dates)
    # A note holds at most two passages there; without the limit it holds more.
    assert sum(path == "notes/brewing.md" for path, *_ in _cli(vault, "coffee", {})) > 2
    assert sum(path == "notes/brewing.md" for path, *_ in over_http[0]) == 2

    asked = [query for query, dates in QUESTIONS if not dates]
    in_the_app = await _app(vault, asked)
    for query in asked:
        assert in_the_app[query] == _cli(vault, query, {}, "--no-time-words"), query
        assert in_the_app[query], query


async def test_since_after_until_is_refused_in_the_same_words_everywhere(vault: Path) -> None:
    dates = {"since": "2026-11-30", "until": "2026-11-01"}
    refused = run_apus(
        "--vault",
        vault,
        "memory",
        "search",
        "coffee",
        "--since",
        dates["since"],
        "--until",
        dates["until"],
        env=server_env(**ENV),
        expect=1,
    )
    reason = "`since` (2026-11-30) is after `until` (2026-11-01): no day is in both."
    assert f"Error: {reason}" in refused.stderr and "Fix: swap them" in refused.stderr
    with http_server(vault, server_env(**ENV)) as server:
        async with agent(vault, server_env(**ENV)) as stdio, http_agent(server.url) as http:
            for session in (stdio, http):
                result = await session.call_tool("memory_search", {"query": "coffee", **dates})
                assert result.is_error
                assert reason in result.content[0].text  # type: ignore[union-attr]
