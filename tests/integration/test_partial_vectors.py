"""Search by meaning during a first embedding: what is embedded is served, in priority order.

A real `apus memory index` on the tiny GGUF is held after its first checkpointed batch (16
passages: MEMORY.md, then the newest dated notes); searches meanwhile, through the CLI and a
session, find those passages by meaning and no others, say how much they cover, and find the
rest by their words without pushing them down. The tiny model's vectors mean nothing, so
"by meaning" is checked on the vector leg's candidates (`--mode vector`), which can only be
passages FAISS holds.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from apus.index.store import Store
from apus.indexing import embedding
from apus.indexing.embedding import EMBED_BATCH_CHUNKS
from apus.indexing.progress import SyncProgress
from apus.memory import Memory
from apus.search.engine import SearchOptions
from support.holds import Hold
from support.tiny_gguf import write_tiny_gguf
from support.vaults import APUS, local_model_settings, run_apus, run_json, write_note

DATED = [f"memory/2026-02-{day:02}.md" for day in range(1, 29)]  # 28 dated notes
UNDATED = [f"archive/a{number:02}.md" for number in range(20)]
# The priority order: MEMORY.md, then dated notes newest first, then the rest.
FIRST_BATCH = ["MEMORY.md", *sorted(DATED, reverse=True)[: EMBED_BATCH_CHUNKS - 1]]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "MEMORY.md", "# Memory\n\nThe blog deploys with make deploy.\n")
    for number, rel in enumerate(DATED):
        write_note(root, rel, f"Day note {number}: watered the plants, word dated{number}.\n")
    for number, rel in enumerate(UNDATED):
        write_note(root, rel, f"# Archive {number}\n\nAn old page about zebra{number:02}.\n")
    return root


def _held_index(vault: Path, hold: Hold, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*APUS, "--vault", str(vault), "memory", "index", *args],
        env={**os.environ, **hold.env(f"embed:{EMBED_BATCH_CHUNKS}")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    point = hold.wait_held(proc=proc)
    assert (point["phase"], point["done"]) == ("embed", EMBED_BATCH_CHUNKS)
    return proc


def _finish(proc: subprocess.Popen[str], hold: Hold) -> None:
    hold.release()
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr


def test_a_first_embedding_serves_what_is_embedded_in_priority_order(
    vault: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = local_model_settings(vault, tiny_model, monkeypatch)
    total = 1 + len(DATED) + len(UNDATED)
    hold = Hold(tmp_path / "hold")
    proc = _held_index(vault, hold)
    try:
        # By meaning: the vector leg's candidates are the first batch, MEMORY.md among them.
        found = run_json(
            "memory", "search", "--json", "--mode", "vector", "-n", "100",
            "The blog deploys with make deploy.", env=dict(os.environ),
        )  # fmt: skip
        paths = {hit["path"] for hit in found["results"]}
        assert "MEMORY.md" in paths and paths <= set(FIRST_BATCH)
        # Each hit says it came from a partial vector set.
        assert all(hit["partial_vectors"] is True for hit in found["results"])
        assert found["legs"]["vector"]["ran"]
        assert found["coverage"] == round(EMBED_BATCH_CHUNKS / total, 4)
        assert found["legs"]["vector"]["coverage"] == pytest.approx(EMBED_BATCH_CHUNKS / total)
        # An undated note is not embedded yet: found by its words, at its keyword score alone.
        hybrid = run_json(
            "memory", "search", "--json", "--explain", "zebra07", env=dict(os.environ)
        )
        assert hybrid["legs"]["vector"]["ran"] and hybrid["coverage"] is not None
        best = hybrid["results"][0]
        assert best["path"] == "archive/a07.md"
        assert best["explain"]["vector_raw"] is None
        assert best["explain"]["merged"] == pytest.approx(best["explain"]["text_norm"]) == 1.0
        assert "partial_vectors" not in best  # found by its words only
        # Text mode says it on stderr; status says it too, as a first build ("embedding").
        text = run_apus("memory", "search", "zebra07", env=dict(os.environ))
        assert f"meaning search covers {100 * EMBED_BATCH_CHUNKS // total}% of passages" in (
            text.stderr
        )
        assert "archive/a07.md" in text.stdout and "(partial vectors)" not in text.stdout
        meaning = run_apus("memory", "search", "--mode", "vector", "deploy", env=dict(os.environ))
        assert meaning.stdout.count("(partial vectors)") == meaning.stdout.count("[vector]") > 0
        status = run_json("memory", "status", "--json", env=dict(os.environ))
        embeddings = status["embeddings"]
        assert embeddings["state"] == "embedding"
        assert embeddings["coverage"] == round(EMBED_BATCH_CHUNKS / total, 4)
        assert embeddings["progress"] == f"{100 * EMBED_BATCH_CHUNKS // total}%"
        assert "meaning search covers" in embeddings["reason"]
    finally:
        if proc.poll() is None:
            _finish(proc, hold)
    with Memory(settings=settings) as memory:
        after = memory.search("x", SearchOptions(mode="vector", limit=100))
        assert after.coverage is None and after.legs["vector"].ran
        assert {hit.path for hit in after.hits} >= set(UNDATED)
        assert memory.status().embeddings.state == "ready"
    whole = run_json("memory", "search", "--json", "--mode", "vector", "x", env=dict(os.environ))
    assert whole["results"] and not any("partial_vectors" in hit for hit in whole["results"])


def test_a_killed_first_embedding_resumes_in_priority_order(
    vault: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = local_model_settings(vault, tiny_model, monkeypatch)
    hold = Hold(tmp_path / "hold")
    proc = _held_index(vault, hold)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    # The resumed run embeds one chunk per checkpoint: each event names exactly one chunk.
    monkeypatch.setattr(embedding, "EMBED_BATCH_CHUNKS", 1)
    with Memory(settings=settings) as memory:
        embedder = memory.provider.embedder
        assert embedder is not None, memory.provider.reason
        key = embedder.identity.key()
        store = Store(settings.index_dir(), readonly=True)
        try:
            first = store.chunks_by_id(sorted(store.vector_chunk_ids(key)))
            assert sorted(c.path for c in first.values()) == sorted(FIRST_BATCH)
        finally:
            store.close()
        # What the killed run embedded is served meanwhile.
        served = memory.search("x", SearchOptions(mode="vector", limit=100))
        assert {hit.path for hit in served.hits} <= set(FIRST_BATCH) and served.coverage

        seen = {c.id for c in first.values()}
        order: list[str] = []
        events: list[SyncProgress] = []

        def watch(event: SyncProgress) -> None:
            if event.phase != "embed":
                return
            events.append(event)
            store = Store(settings.index_dir(), readonly=True)
            try:
                new = sorted(store.vector_chunk_ids(key) - seen)
                seen.update(new)
                chunks = store.chunks_by_id(new)
                order.extend(chunks[i].path for i in new)
            finally:
                store.close()

        report = memory.sync(progress=watch)
    assert report.embedding.state == "done", report.embedding.message()
    # The vault's figure: the resumed run starts where the killed one stopped.
    assert (events[0].done, events[0].total) == (EMBED_BATCH_CHUNKS, report.chunks)
    rest_dated = sorted(DATED, reverse=True)[EMBED_BATCH_CHUNKS - 1 :]
    # Chunk by chunk: the remaining dated notes newest first, then the undated ones.
    assert order[: len(rest_dated)] == rest_dated
    assert set(order[len(rest_dated) :]) == set(UNDATED)


def test_a_model_change_never_serves_the_old_vectors(
    vault: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    local_model_settings(vault, tiny_model, monkeypatch)
    run_apus("memory", "index", env=dict(os.environ), timeout=300)
    other = write_tiny_gguf(tmp_path / "other.gguf", name="tiny-embeddinggemma", seed=99)
    second = local_model_settings(vault, other, monkeypatch)
    hold = Hold(tmp_path / "hold")
    proc = _held_index(vault, hold, "--force")  # the new model's vectors, half built
    try:
        with Memory(settings=second) as memory:
            during = memory.search("zebra07", SearchOptions(mode="hybrid"))
            assert not during.legs["vector"].ran and during.coverage is None
            assert "paused" in during.legs["vector"].reason
            assert during.hits[0].path == "archive/a07.md"  # by words meanwhile
            assert memory.status().embeddings.state == "paused"
    finally:
        if proc.poll() is None:
            _finish(proc, hold)
    with Memory(settings=second) as memory:
        after = memory.search("zebra07", SearchOptions(mode="hybrid"))
        assert after.legs["vector"].ran and after.coverage is None
