"""Scores an agent can read: a memory of notes from years back, asked over MCP with the SDK
client, gives scores that are never 0 and says how relevant each result is."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.vaults import index_vault, write_note

from .test_mcp_server import agent, call


def test_old_notes_keep_readable_scores_and_their_relevance(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    # Two years of monthly notes, years before any date the test runs on: under a plain
    # exponential decay every score would round to 0.
    for month in range(1, 25):
        year, number = 2021 + (month - 1) // 12, (month - 1) % 12 + 1
        text = f"# Month {month}\n\nThe office VPN was discussed again, briefly.\n"
        if month == 3:
            text = "# Decision\n\nWe decided the office VPN moves to WireGuard in spring.\n"
        write_note(vault, f"memory/{year}-{number:02}-15.md", text)
    index_vault(vault)

    async def scenario() -> dict[str, object]:
        async with agent(vault) as session:
            return await call(session, "memory_search", query="decided office VPN WireGuard")

    answer = asyncio.run(scenario())
    results = answer["results"]
    assert isinstance(results, list) and len(results) == 10
    assert results[0]["path"] == "memory/2021-03-15.md"
    scores = [hit["score"] for hit in results]
    assert all(score > 0 for score in scores)
    assert scores == sorted(scores, reverse=True)  # the score the list is ordered by
    assert results[0]["relevance"] == 1.0  # the best keyword match, before recency
    for hit in results:
        # Recency, importance and diversity never take more than the floor (0.9), the
        # lowest importance (0.8) and MMR's λ (0.7) allow: the score stays within reach of
        # the relevance.
        assert 0.9 * 0.8 * 0.7 * hit["relevance"] <= hit["score"] <= 1.25 * hit["relevance"]
