"""The embedding stage works in priority order: MEMORY.md and USER.md, then dated notes newest
first, then the rest. Watched through a real sync with the tiny GGUF behind the managed server:
after each checkpointed batch, which chunks have just got their vector."""

from __future__ import annotations

from pathlib import Path

import pytest

from apus.index.store import Store
from apus.indexing import embedding
from apus.indexing.embedding import embed_order
from apus.indexing.progress import SyncProgress
from apus.memory import Memory
from support.vaults import local_model_settings, write_note

# Written in an order (and with names) whose scan order differs from the priority order.
NOTES = {
    "archive/alpha.md": "# Alpha\n\nOld plans for the attic shelves.\n",
    "memory/2025-03-01.md": "Planted garlic along the fence.\n",
    "USER.md": "# User\n\nPrefers short answers and metric units.\n",
    "journal/2026-11-20-bread.md": "Baked bread, the crumb was open.\n",
    "memory/2026-01-15.md": "Called the plumber about the boiler.\n",
    "MEMORY.md": "# Memory\n\nThe blog deploys with make deploy.\n",
    "notes/zeta.md": "# Zeta\n\nThe router lives in the hallway closet.\n",
    "memory/2024-12-31.md": "New year's eve at the lake.\n",
    "memory/USER.md": "Not the root USER.md: an ordinary note.\n",
}
EXPECTED = [
    "MEMORY.md",
    "USER.md",
    "journal/2026-11-20-bread.md",
    "memory/2026-01-15.md",
    "memory/2025-03-01.md",
    "memory/2024-12-31.md",
]
REST = {"archive/alpha.md", "notes/zeta.md", "memory/USER.md"}


def test_a_sync_embeds_in_priority_order(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(vault, rel, text)
    settings = local_model_settings(vault, tiny_model, monkeypatch)
    # One chunk per checkpoint, so every progress event names exactly one chunk.
    monkeypatch.setattr(embedding, "EMBED_BATCH_CHUNKS", 1)
    embedded_paths: list[str] = []
    seen: set[int] = set()

    with Memory(settings=settings) as memory:
        embedder = memory.provider.embedder
        assert embedder is not None, memory.provider.reason
        key = embedder.identity.key()

        def watch(event: SyncProgress) -> None:
            if event.phase != "embed" or event.done == 0:
                return
            store = Store(settings.index_dir(), readonly=True)
            try:
                new = sorted(store.vector_chunk_ids(key) - seen)
                seen.update(new)
                chunks = store.chunks_by_id(new)
                embedded_paths.extend(chunks[i].path for i in new)
            finally:
                store.close()

        report = memory.sync(progress=watch)
    assert report.embedding.state == "done", report.embedding.message()
    assert report.embedded == report.chunks == len(NOTES)
    assert embedded_paths[: len(EXPECTED)] == EXPECTED
    assert set(embedded_paths[len(EXPECTED) :]) == REST


def test_embed_order_keeps_reading_order_within_a_note_and_among_equals() -> None:
    chunks = [
        (1, "b.md"),
        (2, "memory/2026-01-02.md"),
        (3, "a.md"),
        (4, "memory/2026-01-02.md"),
        (5, "USER.md"),
        (6, "2026-01-02-other.md"),
        (7, "MEMORY.md"),
        (8, "memory/2026-02-30.md"),  # not a calendar date: an ordinary note
        (9, "sessions:codex/2026-03-01.jsonl"),  # a transcript: not a dated note
    ]
    assert embed_order(chunks) == [7, 5, 6, 2, 4, 1, 3, 8, 9]
