"""An agent asking during the server's own first embedding is answered by meaning from what
is embedded, and told how much that covers.

`apus mcp` on a fresh vault with the tiny GGUF runs the first embedding itself; its sync is
held once its first batch of vectors is committed (MEMORY.md, then the newest dated notes:
the priority order), so what the agent sees then is the same on any machine. The tiny
model's vectors mean nothing: "found by meaning" is the per-hit `partialVectors` mark, set
on exactly the hits the vector leg found, which can only be passages FAISS holds.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from agents.mcp_client import agent, call, server_env, text_of
from apus.indexing.embedding import EMBED_BATCH_CHUNKS
from support.holds import Hold
from support.vaults import write_note

DATED = [f"memory/2026-02-{day:02}.md" for day in range(1, 29)]
UNDATED = [f"archive/a{number:02}.md" for number in range(20)]
FIRST_BATCH = {"MEMORY.md", *sorted(DATED, reverse=True)[: EMBED_BATCH_CHUNKS - 1]}
TOTAL = 1 + len(DATED) + len(UNDATED)  # one passage per note


def _vault(root: Path) -> Path:
    write_note(root, "MEMORY.md", "# Memory\n\nThe blog deploys with make deploy.\n")
    for number, rel in enumerate(DATED):
        write_note(root, rel, f"Day note {number}: watered the plants, word dated{number}.\n")
    for number, rel in enumerate(UNDATED):
        write_note(root, rel, f"# Archive {number}\n\nAn old page about zebra{number:02}.\n")
    return root


def _embedding_env(model: Path, hold: Hold) -> dict[str, str]:
    return server_env(
        **hold.env(f"embed:{EMBED_BATCH_CHUNKS}"),
        APUS_MEMORY__SEARCH__PROVIDER="local",
        APUS_MEMORY__SEARCH__LOCAL__MODELPATH=str(model),
        APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE="512",
    )


async def test_a_search_during_the_first_embedding_finds_the_embedded_notes_by_meaning(
    tmp_path: Path, tiny_model: Path
) -> None:
    vault = _vault(tmp_path / "vault")
    hold = Hold(tmp_path / "hold")
    async with agent(vault, _embedding_env(tiny_model, hold)) as session:
        point = await anyio.to_thread.run_sync(hold.wait_held)
        assert (point["phase"], point["done"]) == ("embed", EMBED_BATCH_CHUNKS)

        status = await call(session, "memory_status")
        embeddings = status["embeddings"]
        assert embeddings["state"] == "embedding"  # a first build, not "rebuilding"
        assert embeddings["coverage"] == round(EMBED_BATCH_CHUNKS / TOTAL, 4)
        assert "meaning search covers" in embeddings["reason"]

        # Every dated note holds the words; only the embedded ones were found by meaning too.
        found = await call(
            session, "memory_search", query="watered the plants", maxResults=100, perNote=1
        )
        assert found["mode"] == "hybrid"
        assert found["coverage"] == round(EMBED_BATCH_CHUNKS / TOTAL, 4)
        by_meaning = {hit["path"] for hit in found["results"] if hit.get("partialVectors")}
        assert set(DATED) <= {hit["path"] for hit in found["results"]}
        assert by_meaning & set(DATED) == FIRST_BATCH & set(DATED)
        assert by_meaning <= FIRST_BATCH
        # A note not embedded yet is found by its words alone, unmarked.
        zebra = await call(session, "memory_search", query="zebra07")
        assert zebra["results"][0]["path"] == "archive/a07.md"
        assert "partialVectors" not in zebra["results"][0]
        text = await text_of(session, "memory_search", query="watered the plants")
        assert "(partial vectors)" in text and "Still embedding: meaning search covers" in text

        # Step to the moment the last batch has landed and the identity is recorded, before
        # the vectors file is refreshed: the vectors are whole and served, not "rebuilding".
        while point["phase"] != "identity":
            hold.release(point["n"])
            point = await anyio.to_thread.run_sync(hold.wait_held, point["n"])
        status = await call(session, "memory_status")
        assert status["embeddings"]["state"] == "ready"

        hold.release()
        while (state := (await call(session, "memory_status"))["embeddings"]["state"]) == (
            "embedding"
        ):
            pass  # the server's own signal ends the wait, not a clock
        assert state == "ready"
        done = await call(
            session, "memory_search", query="watered the plants", maxResults=100, perNote=1
        )
    assert "coverage" not in done
    assert set(DATED) <= {hit["path"] for hit in done["results"]}
    assert not any("partialVectors" in hit for hit in done["results"])
