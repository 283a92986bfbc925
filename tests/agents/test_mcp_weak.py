"""A passage only the vector leg found, below its model's measured cosine, reaches the agent
marked `weak`: in the structured content and at the end of its text line."""

from __future__ import annotations

from pathlib import Path

from agents.mcp_client import agent, server_env, text_of
from apus.search.weak import weak_threshold
from support.vaults import run_apus, write_note
from support.weak_vault import MINILM_FILE, NOTES, NOTHING_SAID, spread_model


async def test_a_weak_passage_says_so(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(vault, rel, text)
    model = spread_model(tmp_path / "model", MINILM_FILE)
    env = server_env(
        APUS_MEMORY__SEARCH__PROVIDER="local",
        APUS_MEMORY__SEARCH__LOCAL__MODELPATH=str(model),
        APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE="512",
    )
    run_apus("--vault", vault, "memory", "index", env=env)
    async with agent(vault, env) as session:
        result = await session.call_tool("memory_search", {"query": NOTHING_SAID, "minScore": 0})
        answer = result.structured_content
        assert answer is not None and answer["mode"] == "hybrid"
        lines = (await text_of(session, "memory_search", query=NOTHING_SAID, minScore=0)).split(
            "\n"
        )
    passages = answer["results"]
    assert passages
    assert weak_threshold("none@1", MINILM_FILE) is not None
    weak = [p for p in passages if p.get("weak")]
    assert weak, passages
    assert all(p["weak"] is True for p in weak)
    assert len(weak) < len(passages)  # the nearest notes are not all weak
    # One text line per passage after the header, in the same order.
    for passage, line in zip(passages, lines[1 : 1 + len(passages)], strict=True):
        assert line.startswith(passage["citation"])
        assert line.endswith("  (weak)") == bool(passage.get("weak"))
