"""Answers shaped for a model: readable argument errors, real defaults, annotations, compact
text beside the full structured content, perNote and maxChars."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp_types import CallToolResult

from agents.mcp_client import agent, call, refused, server_env
from support.vaults import index_vault, run_json, write_note


def _long_note() -> str:
    parts = [
        f"## Part {n}\n\nThe kestrel nests on the tower, entry {n}. " + "filler words. " * 30
        for n in range(6)
    ]
    return "# Long\n\n" + "\n\n".join(parts) + "\n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "notes/long.md", _long_note())
    for n in range(12):
        write_note(root, f"notes/n{n:02d}.md", f"# N{n}\n\nA kestrel was seen by the river {n}.\n")
    index_vault(root, server_env())
    return root


async def test_schemas_carry_real_defaults_titles_and_annotations(vault: Path) -> None:
    async with agent(vault) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        args = tools["memory_search"].input_schema["properties"]
        assert args["minScore"]["default"] == 0.35 and args["minScore"]["type"] == "number"
        assert args["maxResults"]["default"] == 10 and args["perNote"]["default"] == 2
        # Optional filters take what they say, without a null default to read.
        assert args["since"]["type"] == "string" and "default" not in args["since"]
        assert "null" not in json.dumps(tools["memory_search"].input_schema)
        for tool in tools.values():
            hints = tool.annotations
            assert hints is not None and tool.title and hints.title == tool.title
            assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
                True,
                False,
                True,
            )


async def test_every_argument_error_is_one_readable_sentence(vault: Path) -> None:
    cases = [
        ("memory_search", {"query": "kestrel", "maxResults": "ten"}, "`maxResults`"),
        ("memory_search", {"query": "kestrel", "maxResults": 0}, "at least 1"),
        ("memory_search", {"query": "kestrel", "corpus": "web"}, '"memory"'),
        ("memory_search", {"query": "kestrel", "minScore": 3}, "less than or equal to 1"),
        ("memory_search", {"query": "kestrel", "maxChars": 10}, "at least 300"),
        ("memory_search", {"maxResults": 3}, "`query` is required"),
        ("memory_get", {"path": "notes/n00.md", "lines": 5000}, "at most 2000"),
        ("memory_get", {"path": "notes/n00.md", "from": 0}, "`from`"),
        ("sessions_history", {"sessionKey": "a/b", "limit": "x"}, "`limit`"),
    ]
    async with agent(vault) as session:
        for tool, arguments, says in cases:
            text = await refused(session, tool, **arguments)
            assert says in text, (tool, arguments, text)
            assert text.count("Fix:") == 1 and "\n" not in text, text
            for noise in ("pydantic", "http", "[type=", "validation error", "Arguments"):
                assert noise not in text, text

        unknown = await refused(session, "memory_search", query="kestrel", limit=3)
        assert "`limit`" in unknown and "`maxResults`" in unknown, unknown
        two = await refused(session, "memory_get", path="notes/n00.md", start=3, colour=1)
        assert "`start`" in two and "`colour`" in two and "`from`" in two, two


async def test_max_results_above_the_cap_is_clamped_and_said(vault: Path) -> None:
    async with agent(vault) as session:
        answer = await call(session, "memory_search", query="kestrel", maxResults=5000)
        assert answer["notices"] == ["maxResults 5000 is above the cap of 200: clamped"]
        assert 0 < len(answer["results"]) <= 200


async def test_text_is_one_line_per_hit_and_structure_is_whole(vault: Path) -> None:
    async with agent(vault) as session:
        result = await session.call_tool("memory_search", {"query": "kestrel", "maxResults": 5})
        structured = result.structured_content or {}
        hits = structured["results"]
        lines = result.content[0].text.splitlines()  # type: ignore[union-attr]
        assert len(lines) == 1 + len(hits) == 6
        for line, hit in zip(lines[1:], hits, strict=True):
            citation, score, snippet = line.split("  ", 2)
            assert citation == hit["citation"] and float(score) == pytest.approx(
                hit["score"], abs=1e-3
            )
            assert snippet == " ".join(hit["snippet"].split())
            assert len(hit["snippet"]) <= 150  # the answer's snippet width
        assert {"path", "citation", "score", "relevance", "snippet", "source"} <= set(hits[0])
        assert "startLine" not in hits[0]  # the citation holds the lines
        assert "{" not in result.content[0].text  # type: ignore[union-attr]


async def test_per_note_caps_and_merges_a_notes_passages(vault: Path) -> None:
    async with agent(vault) as session:
        wide = await call(session, "memory_search", query="kestrel tower", maxResults=20)
        long = [hit for hit in wide["results"] if hit["path"] == "notes/long.md"]
        # Six matching sections, neighbours one blank line apart: merged into at most two.
        assert 1 <= len(long) <= 2
        lines = [hit["citation"].rsplit("#L", 1)[1].split("-L") for hit in long]
        covered = sum(int(end) - int(start) + 1 for start, end in lines)
        assert covered > 2 * 3, long  # more than two sections' lines
        one = await call(session, "memory_search", query="kestrel tower", maxResults=20, perNote=1)
        paths = [hit["path"] for hit in one["results"]]
        assert len(paths) == len(set(paths))


async def test_max_chars_holds_the_whole_answer(vault: Path) -> None:
    def sizes(result: CallToolResult) -> tuple[int, int]:
        body = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        return len(result.content[0].text), len(body)  # type: ignore[union-attr]

    async with agent(vault) as session:
        asked = {"query": "kestrel tower", "maxResults": 10}
        full = await session.call_tool("memory_search", asked)
        budget = max(sizes(full)) // 2
        result = await session.call_tool("memory_search", {**asked, "maxChars": budget})
        assert max(sizes(result)) <= budget
        structured = result.structured_content or {}
        assert structured["results"]
        assert any(f"maxChars {budget}" in n for n in structured["notices"])
        cut = [hit["snippet"] for hit in structured["results"] if hit["snippet"].endswith("…")]
        assert cut, structured


def test_cli_per_note(vault: Path) -> None:
    env = server_env()
    args = ("--vault", vault, "memory", "search", "kestrel tower", "-n", "20", "--json")
    every = run_json(*args, env=env)["results"]
    assert sum(hit["path"] == "notes/long.md" for hit in every) > 1
    one = run_json(*args, "--per-note", "1", env=env)["results"]
    assert [hit["path"] for hit in one].count("notes/long.md") == 1
    assert len(one) == len({hit["path"] for hit in one}) == 13
