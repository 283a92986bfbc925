"""The second stage as an agent sees it over MCP (the SDK client, a real `apus mcp`): the
reranker's score of each passage in `debug`, and a notice, with the fix, when it did not run
and the fused order stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents.mcp_client import agent, call, server_env
from support.tiny_cross_encoder import build
from support.vaults import index_vault, write_note

NOTES = {
    "gravel.md": "# Gravel\n\nharbour beacon harbour beacon notes about the gravel shed\n",
    "keeper.md": "# Keeper\n\nthe harbour and the lighthouse keeper of the granite island\n",
    "path.md": "# Path\n\nthe beacon on the coast path\n",
}


async def _answer(vault: Path, env: dict[str, str]) -> dict[str, Any]:
    index_vault(vault, env)
    async with agent(vault, env) as session:
        return await call(session, "memory_search", query="harbour beacon")


async def test_the_answer_carries_the_rerank_scores(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(vault, rel, text)
    model = build(tmp_path / "reranker")
    env = server_env(
        APUS_MEMORY__SEARCH__RERANK__ENABLED="true",
        APUS_MEMORY__SEARCH__RERANK__LOCAL__MODELPATH=str(model),
    )
    answer = await _answer(vault, env)
    paths = [passage["path"] for passage in answer["results"]]
    assert paths[0] == "keeper.md"
    rerank = answer["debug"]["rerank"]
    assert (rerank["ran"], rerank["candidates"], rerank["reason"]) == (True, 3, "")
    scores = dict(zip(paths, rerank["scores"], strict=True))  # one a passage, in order
    assert scores["keeper.md"] > 0 > scores["gravel.md"]
    assert answer.get("notices") is None


async def test_a_reranker_that_did_not_run_is_a_notice_with_its_fix(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(vault, rel, text)
    env = server_env(APUS_MEMORY__SEARCH__RERANK__ENABLED="true")  # never pulled here
    answer = await _answer(vault, env)
    assert answer["results"][0]["path"] == "gravel.md"  # the fused order
    assert answer["notices"] == [
        "reranking did not run (the fused order stands): the reranking model "
        "ms-marco-minilm-l12-v2 is not downloaded yet. Fix: apus models pull "
        "ms-marco-minilm-l12-v2"
    ]
    assert answer["debug"]["rerank"]["ran"] is False
    assert answer["debug"]["rerank"]["scores"] == [None, None, None]
