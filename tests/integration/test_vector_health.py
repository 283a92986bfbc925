"""vectors.faiss is checked against its stamp and the store: never served missing or wrong.

The store keeps every vector; FAISS is derived from it. A missing, garbled or stale file
makes the vector leg say why it did not run, `VectorIndex.health` reports it, and the next
sync rebuilds it from the store, so the neighbours are the store's again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pytest

from apus.config import Settings
from apus.embed.providers import resolve_provider
from apus.index.store import Store
from apus.index.vectors import VectorIndex
from support.vaults import local_model_settings, search_response, write_note
from support.vaults import sync as sync_index

NOTES = {
    "garden.md": "# Garden\n\nTomatoes and basil grow on the balcony in summer.\n",
    "network.md": "# Network\n\nThe router lives in the hallway closet next to the modem.\n",
    "bread.md": "# Bread\n\nBaked bread today, the crumb was open and the crust dark.\n",
}


@pytest.fixture
def settings(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(vault, rel, text)
    settings = local_model_settings(vault, tiny_model, monkeypatch)
    report = sync_index(settings)
    assert report.embedding.state == "done" and report.embedded == report.chunks
    yield settings
    resolution = resolve_provider(settings.search)
    if resolution.embedder is not None:
        resolution.embedder.describe()
        resolution.embedder.close()


def _identity_key(settings: Settings) -> str:
    resolution = resolve_provider(settings.search)
    assert resolution.embedder is not None
    return resolution.embedder.identity.key()


def _vector_leg(settings: Settings) -> tuple[bool, str, int]:
    leg = search_response(settings, "router closet", mode="hybrid").legs["vector"]
    return leg.ran, f"{leg.reason} Fix: {leg.fix}", leg.candidates


def _assert_faiss_matches_store(settings: Settings) -> None:
    """Every vector in vectors.faiss is the store's vector of that chunk, and no other."""
    key = _identity_key(settings)
    index = faiss.read_index(str(settings.index_dir() / VectorIndex.FILENAME))
    store = Store(settings.index_dir(), readonly=True)
    try:
        wanted = store.vector_chunk_ids(key)
        expected = dict(store.vectors_for_chunks(key, sorted(wanted)))
        chunk_texts = {c.id: c.text for c in store.iter_chunks()}
    finally:
        store.close()
    held = set(faiss.vector_to_array(index.id_map).tolist())
    assert held == wanted == set(chunk_texts)
    for chunk_id, vector in expected.items():
        assert np.allclose(index.reconstruct(chunk_id), vector, atol=1e-6), chunk_texts[chunk_id]


def test_a_missing_file_is_reported_then_rebuilt(settings: Settings) -> None:
    key = _identity_key(settings)
    vectors = VectorIndex(settings.index_dir())
    assert vectors.health(key).state == "ok"
    vectors.path.unlink()

    assert vectors.health(key).state == "missing"
    ran, reason, _ = _vector_leg(settings)
    assert not ran
    assert "vectors.faiss is missing" in reason and "apus memory index" in reason

    sync_index(settings)
    health = vectors.health(key)
    assert health.state == "rebuilt" and "missing" in health.reason
    ran, _, candidates = _vector_leg(settings)
    assert ran and candidates == 3
    _assert_faiss_matches_store(settings)


def test_garbage_inside_the_file_is_never_served_and_is_rebuilt(settings: Settings) -> None:
    key = _identity_key(settings)
    vectors = VectorIndex(settings.index_dir())
    data = bytearray(vectors.path.read_bytes())
    # Same size, same header: only the vectors themselves are garbage.
    middle = len(data) // 2
    data[middle : middle + 64] = np.random.default_rng(1).bytes(64)
    vectors.path.write_bytes(bytes(data))

    assert vectors.health(key).state == "damaged"
    ran, reason, _ = _vector_leg(settings)
    assert not ran and "does not match its checksum" in reason

    sync_index(settings)
    assert vectors.health(key).state == "rebuilt"
    assert _vector_leg(settings)[0]
    _assert_faiss_matches_store(settings)


def test_editing_the_newest_note_gives_its_new_vector(settings: Settings) -> None:
    vault = settings.vault_path()
    write_note(vault, "zebra.md", "# Zebra\n\nStripes in the savanna at dawn.\n")
    sync_index(settings)
    # The newest note's chunk had the highest id; an edit replaces it with a new chunk.
    write_note(vault, "zebra.md", "# Zebra\n\nA completely different text about coffee.\n")
    sync_index(settings)
    _assert_faiss_matches_store(settings)
    assert VectorIndex(settings.index_dir()).health(_identity_key(settings)).state == "ok"
