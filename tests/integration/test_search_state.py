"""What one search learns stays with that search: a damaged vector file met by one query is
repaired because that query asked, whatever another query does meanwhile, and a query that
met nothing asks for nothing.

A session serves many callers at once (the app's keystrokes, every client of `apus mcp
--http`): the repair one answer calls for travels on that answer (`LegReport.repair`), and
the session acts on it once; nothing is parked on the shared Searcher for the next caller.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from apus.config import Settings
from apus.embed.providers import resolve_provider
from apus.index.vectors import VectorIndex
from apus.indexing.request import SyncRequest
from apus.memory import Memory
from apus.search.engine import SearchResponse
from apus.search.options import SearchOptions
from support.vaults import local_model_settings, write_note
from support.vaults import sync as sync_index

NOTES = {
    "garden.md": "# Garden\n\nTomatoes and basil grow on the balcony in summer.\n",
    "network.md": "# Network\n\nThe router lives in the hallway closet next to the modem.\n",
}
QUERY = "router closet"


@pytest.fixture
def settings(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(vault, rel, text)
    settings = local_model_settings(vault, tiny_model, monkeypatch)
    assert sync_index(settings).embedding.state == "done"
    yield settings
    resolution = resolve_provider(settings.search)
    if resolution.embedder is not None:
        resolution.embedder.close()


class _Session:
    """A session whose sync requests are recorded with the thread that made them (it is not
    live, so nothing else would see them)."""

    def __init__(self, settings: Settings) -> None:
        self.memory = Memory(settings=settings)
        self.asked: list[str] = []

        def request_sync(_request: SyncRequest | None = None) -> None:
            self.asked.append(threading.current_thread().name)

        self.memory.request_sync = request_sync  # type: ignore[method-assign]


class _Paused:
    """A search as the app runs it (`search_stages`) in a thread of its own, stopped after
    its final answer, before the session is back from it: the moment another caller's
    search may run."""

    def __init__(self, memory: Memory, name: str) -> None:
        self._stages = memory.search_stages(QUERY, SearchOptions(mode="hybrid"))
        self.final: SearchResponse | None = None
        self._answered = threading.Event()
        self._go_on = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name)

    def _run(self) -> None:
        for response in self._stages:
            if response.final:
                self.final = response
                self._answered.set()
                self._go_on.wait()

    def start(self) -> SearchResponse:
        self._thread.start()
        assert self._answered.wait(timeout=120), "the search gave no final answer"
        assert self.final is not None
        return self.final

    def finish(self) -> None:
        self._go_on.set()
        self._thread.join(timeout=120)
        assert not self._thread.is_alive()


def _search_in_thread(memory: Memory, name: str, options: SearchOptions) -> SearchResponse:
    found: list[SearchResponse] = []
    thread = threading.Thread(target=lambda: found.append(memory.search(QUERY, options)), name=name)
    thread.start()
    thread.join(timeout=120)
    assert found, f"{name} gave no answer"
    return found[0]


def _garble(vectors: Path) -> bytes:
    """Garbage in the middle of the file (same size): it no longer matches its checksum.
    Returns the bytes it held, to put back."""
    saved = vectors.read_bytes()
    data = bytearray(saved)
    middle = len(data) // 2
    data[middle : middle + 64] = np.random.default_rng(7).bytes(64)
    vectors.write_bytes(bytes(data))
    return saved


def test_a_query_that_met_nothing_asks_for_no_repair(settings: Settings) -> None:
    session = _Session(settings)
    vectors = settings.index_dir() / VectorIndex.FILENAME
    try:
        _garble(vectors)
        meets = _Paused(session.memory, "meets-damage")
        damaged = meets.start()
        assert not damaged.legs["vector"].ran
        assert "does not match its checksum" in damaged.legs["vector"].reason
        # Meanwhile, a search by words alone, which never reads the vector file.
        words = _search_in_thread(session.memory, "by-words", SearchOptions(mode="keyword"))
        assert words.hits and words.hits[0].path == "network.md"
        assert not words.repairs
        meets.finish()
        assert session.asked == ["meets-damage"]
    finally:
        session.memory.close()


def test_a_repair_one_query_found_is_not_lost_to_another_query(settings: Settings) -> None:
    session = _Session(settings)
    vectors = settings.index_dir() / VectorIndex.FILENAME
    try:
        saved = _garble(vectors)
        meets = _Paused(session.memory, "meets-damage")
        damaged = meets.start()
        assert not damaged.legs["vector"].ran and damaged.repairs == {"vectors"}
        # Another caller searches by meaning while the first is still on its way back: the
        # file reads well for it (put back as it was), and its answer asks for nothing.
        vectors.write_bytes(saved)
        served = _search_in_thread(session.memory, "served", SearchOptions(mode="hybrid"))
        assert served.legs["vector"].ran and not served.repairs
        meets.finish()
        # The first query met damage: its own answer asked for the repair.
        assert session.asked == ["meets-damage"]
    finally:
        session.memory.close()
