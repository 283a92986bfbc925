"""memory.search.vectorDims: vectors.faiss holds the head of each stored vector; a change of
width rebuilds the file once from the store, never re-embeds, and never serves the old one."""

from __future__ import annotations

import time
from pathlib import Path

import faiss
import numpy as np
import pytest

from apus.config import SettingsSource
from apus.index.identity import stored_identity
from apus.index.store import Store
from apus.index.vectors import VectorIndex
from apus.memory import Memory
from apus.search.engine import SearchOptions
from support.holds import Hold
from support.tiny_gguf import HIDDEN
from support.vaults import embeddings, local_model_settings, search_response, sync, write_note

NOTES = {
    "projects/garden.md": "# Garden\n\nTomatoes and basil grow on the balcony in summer.\n",
    "projects/network.md": "# Network\n\nThe router lives in the hallway closet next to the "
    "modem.\n",
    "daily/2026-11-20.md": "Baked bread today, the crumb was open and the crust dark.\n",
}
NARROW = HIDDEN // 2


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(root, rel, text)
    return root


def _faiss_file(index_dir: Path) -> tuple[faiss.Index, tuple[int, int]]:
    path = index_dir / VectorIndex.FILENAME
    info = path.stat()
    return faiss.read_index(str(path)), (info.st_ino, info.st_mtime_ns)


def _stored_vector(index_dir: Path, chunk_id: int) -> np.ndarray:
    store = Store(index_dir, readonly=True)
    try:
        identity = stored_identity(store)
        assert identity is not None
        return dict(store.vectors_for_chunks(identity.key(), [chunk_id]))[chunk_id]
    finally:
        store.close()


def test_a_width_change_rebuilds_the_file_once_from_the_store(
    vault: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    full = local_model_settings(vault, tiny_model, monkeypatch)
    first = sync(full)
    assert first.embedded == first.chunks
    index, _ = _faiss_file(full.index_dir())
    assert index.d == HIDDEN

    narrow = local_model_settings(
        vault, tiny_model, monkeypatch, APUS_MEMORY__SEARCH__VECTORDIMS=str(NARROW)
    )
    store = Store(narrow.index_dir(), readonly=True)
    cached = store.cache_size()
    store.close()
    hold = Hold(tmp_path / "hold")  # the background rebuild waits once it holds the writer
    for name, value in hold.env("start:0").items():
        monkeypatch.setenv(name, value)
    with Memory(SettingsSource(vault=vault)) as memory:
        # The session asks for the one rebuild; until it is done, the full-width file is
        # never served at the new width: search is by words and says why.
        before = memory.search("router closet", SearchOptions(mode="hybrid"))
        assert before.legs["keyword"].ran and not before.legs["vector"].ran
        assert "vector width" in before.legs["vector"].reason
        assert before.hits and before.hits[0].path == "projects/network.md"
        hold.wait_held()
        hold.release()
        deadline = time.monotonic() + 120
        while not memory.search("router closet", SearchOptions(mode="hybrid")).legs["vector"].ran:
            assert time.monotonic() < deadline, "the background rebuild did not finish"
            time.sleep(0.2)
    for name in hold.env("start:0"):
        monkeypatch.delenv(name)
    store = Store(narrow.index_dir(), readonly=True)
    assert store.cache_size() == cached  # the store's vectors, truncated: nothing embedded
    store.close()

    index, signature = _faiss_file(narrow.index_dir())
    rebuilt = sync(narrow)  # the background run did it all: this one has nothing to do
    assert rebuilt.embedded == 0
    assert _faiss_file(narrow.index_dir())[1] == signature
    assert index.d == NARROW and index.ntotal == first.chunks
    chunk_id = int(faiss.vector_to_array(index.id_map)[0])
    head = _stored_vector(narrow.index_dir(), chunk_id)[:NARROW]
    assert np.allclose(index.reconstruct(chunk_id), head / np.linalg.norm(head), atol=1e-6)
    # The store still holds the full width: widening again needs no model either.
    assert _stored_vector(narrow.index_dir(), chunk_id).shape == (HIDDEN,)

    after = search_response(narrow, "router closet", mode="hybrid")
    assert after.legs["vector"].ran, after.legs["vector"].reason
    assert embeddings(narrow).state == "ready"
    assert embeddings(narrow).vectors == first.chunks

    monkeypatch.delenv("APUS_MEMORY__SEARCH__VECTORDIMS")
    widened = sync(local_model_settings(vault, tiny_model, monkeypatch))
    assert widened.embedded == 0
    assert _faiss_file(full.index_dir())[0].d == HIDDEN


def test_a_width_wider_than_the_model_is_a_clear_error(
    vault: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = local_model_settings(
        vault, tiny_model, monkeypatch, APUS_MEMORY__SEARCH__VECTORDIMS=str(HIDDEN * 2)
    )
    report = sync(settings)
    assert report.embedding.problem is not None
    assert report.embedding.problem.reason == (
        f"memory.search.vectorDims {HIDDEN * 2} is wider than the model's {HIDDEN} dimensions"
    )
    assert "memory.search.vectorDims" in (report.embedding.problem.fix or "")
    response = search_response(settings, "router closet", mode="hybrid")
    assert response.legs["keyword"].ran and not response.legs["vector"].ran
    assert "memory.search.vectorDims" in response.legs["vector"].reason
