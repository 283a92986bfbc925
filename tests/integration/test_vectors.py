"""Semantic search end to end: the tiny real GGUF behind the managed server, FAISS, identity."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from apus.config import Settings, load_settings
from apus.core import embeddings_state, index_status, open_searcher, sync_index
from apus.embed.providers import resolve_provider
from apus.index.identity import stored_identity
from apus.index.store import Store
from apus.index.sync import SyncProgress
from apus.search.engine import SearchOptions
from support.recording_server import RecordingServer
from support.tiny_gguf import write_tiny_gguf

from .helpers import local_model_settings, write_note

NOTES = {
    "MEMORY.md": "---\ntitle: Memory\ntriggers:\n  - deploy the blog\n---\n# Memory\n\n"
    "Deploy the blog with make deploy from the blog folder.\n",
    "projects/garden.md": "# Garden\n\nTomatoes and basil grow on the balcony in summer.\n",
    "projects/network.md": "# Network\n\nThe router lives in the hallway closet next to the "
    "modem.\n",
    "daily/2026-11-20.md": "Baked bread today, the crumb was open and the crust dark.\n",
}


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("models")
    first = write_tiny_gguf(folder / "tiny-embeddinggemma.gguf", name="tiny-embeddinggemma")
    other = write_tiny_gguf(
        folder / "other-embeddinggemma.gguf", name="tiny-embeddinggemma", seed=99
    )
    return first, other


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(root, rel, text)
    return root


def stop_server(settings: Settings) -> None:
    resolution = resolve_provider(settings.search)
    if resolution.embedder is not None:
        resolution.embedder.describe()
        resolution.embedder.close()


def test_index_and_hybrid_search_with_the_managed_server(
    vault: Path, tiny_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = local_model_settings(vault, tiny_models[0], monkeypatch)
    report = sync_index(settings)
    assert report.embed_error == ""
    assert report.embedded == report.chunks
    searcher = open_searcher(settings)
    try:
        response = searcher.search("router closet", SearchOptions(mode="hybrid"))
    finally:
        searcher.close()
    assert response.legs["vector"].ran, response.legs["vector"].reason
    assert response.legs["keyword"].ran
    assert response.hits[0].path == "projects/network.md"
    assert "vector" in response.hits[0].legs
    state = embeddings_state(settings)
    assert state["state"] == "ready"
    assert state["vectors"] == report.chunks
    assert state["prefix_scheme"].startswith("embeddinggemma")
    # A second sync embeds nothing: every vector comes from the store.
    again = sync_index(settings)
    assert again.embedded == 0
    # --reembed ignores the cache: every chunk goes to the model again, and search still works.
    forced = sync_index(settings, reembed=True)
    assert forced.embedded == report.chunks
    assert embeddings_state(settings)["vectors"] == report.chunks


def test_prefix_scheme_change_reembeds_once_while_keyword_serves(
    vault: Path, tiny_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    old = local_model_settings(
        vault, tiny_models[0], monkeypatch, APUS_MEMORY__SEARCH__LOCAL__PREFIXSCHEME="none"
    )
    sync_index(old)
    store = Store(old.index_dir(), readonly=True)
    before_cache = store.cache_size()
    old_identity = stored_identity(store)
    store.close()
    assert old_identity is not None and old_identity.prefix_scheme.startswith("none")

    # The family comes from the GGUF again: prefixes on.
    new = local_model_settings(vault, tiny_models[0], monkeypatch)
    assert embeddings_state(new)["state"] == "rebuilding"
    searcher = open_searcher(new)  # starts the one background re-embed
    try:
        during = searcher.search("router closet", SearchOptions(mode="hybrid"))
        assert during.legs["keyword"].ran
        assert during.hits and during.hits[0].path == "projects/network.md"
        deadline = time.monotonic() + 120
        while embeddings_state(new)["state"] != "ready":
            assert time.monotonic() < deadline, "the background re-embed did not finish"
            time.sleep(0.5)
        after = searcher.search("router closet", SearchOptions(mode="hybrid"))
        assert after.legs["vector"].ran
    finally:
        searcher.close()
    store = Store(new.index_dir(), readonly=True)
    try:
        chunks = store.counts()[1]
        # Exactly one fresh vector per chunk (+ the trusted trigger): old entries never reused.
        assert store.cache_size() == before_cache + chunks + 1
        assert stored_identity(store).prefix_scheme.startswith("embeddinggemma")  # type: ignore[union-attr]
    finally:
        store.close()
    # Once rebuilt, opening again starts nothing: the decision is "serve".
    assert embeddings_state(new)["state"] == "ready"
    stop_server(new)


def test_model_change_pauses_vectors_and_force_rebuilds(
    vault: Path, tiny_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = local_model_settings(vault, tiny_models[0], monkeypatch)
    sync_index(first)
    second = local_model_settings(vault, tiny_models[1], monkeypatch)
    state = embeddings_state(second)
    assert state["state"] == "paused"
    assert state["fix"] == "apus memory index --force"
    searcher = open_searcher(second)
    try:
        response = searcher.search("router", SearchOptions(mode="hybrid"))
    finally:
        searcher.close()
    assert not response.legs["vector"].ran
    assert "paused" in response.legs["vector"].reason
    assert response.hits[0].path == "projects/network.md"  # keyword still answers
    report = sync_index(second)  # without --force nothing is re-embedded
    assert report.embedded == 0 and "paused" in report.embed_error
    forced = sync_index(second, force=True)
    assert forced.embedded == forced.chunks
    assert embeddings_state(second)["state"] == "ready"
    status = index_status(second)
    assert status.embeddings["state"] == "ready"


def test_killed_server_mid_index_keyword_keeps_working_and_index_completes(
    tmp_path: Path, tiny_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "big"
    for number in range(400):
        write_note(
            root,
            f"notes/n{number:03}.md",
            f"# Note {number}\n\n" + f"word{number} shared text about topic {number % 7}\n" * 20,
        )
    settings = local_model_settings(
        root, tiny_models[0], monkeypatch, APUS_MEMORY__SEARCH__LOCAL__BATCHTOKENS="256"
    )
    resolution = resolve_provider(settings.search)
    killed = threading.Event()

    def on_progress(event: SyncProgress) -> None:
        if event.phase == "embed" and event.done > 0 and not killed.is_set():
            pid = resolution.embedder.describe().get("pid")  # type: ignore[union-attr]
            os.kill(int(pid), signal.SIGKILL)
            killed.set()

    sync_index(settings, progress=on_progress, resolution=resolution)
    assert killed.is_set()
    searcher = open_searcher(settings)
    try:
        hits = searcher.search("word123", SearchOptions(mode="keyword")).hits
        assert hits and hits[0].path == "notes/n123.md"
    finally:
        searcher.close()
    # Whatever the first run managed, a later sync (server restarted) completes every vector.
    sync_index(settings)
    state = embeddings_state(settings)
    assert state["state"] == "ready"
    assert state["vectors"] == index_status(settings).chunks
    resolution.embedder.close()  # type: ignore[union-attr]
    stop_server(settings)


def test_exact_prefixed_strings_reach_an_openai_compatible_endpoint(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with RecordingServer(dims=16) as server:
        monkeypatch.setenv("APUS_VAULT", str(vault))
        monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "openai-compatible")
        monkeypatch.setenv("APUS_MEMORY__SEARCH__MODEL", "embeddinggemma-300m")
        monkeypatch.setenv("APUS_MEMORY__SEARCH__REMOTE__BASEURL", server.url)
        settings = load_settings()
        sync_index(settings)
        sent = server.inputs()
        assert (
            "title: Garden | text: # Garden\n\nTomatoes and basil grow on the balcony in "
            "summer." in sent
        )
        assert any(s.startswith("title: none | text: Baked bread today") for s in sent)
        searcher = open_searcher(settings)
        try:
            searcher.search("balcony plants", SearchOptions(mode="hybrid"))
        finally:
            searcher.close()
        assert server.inputs()[-1] == "task: search result | query: balcony plants"


def test_explicit_remote_provider_unreachable_is_reported(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apus.errors import ApusError

    monkeypatch.setenv("APUS_VAULT", str(vault))
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "openai-compatible")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__MODEL", "some-model")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__REMOTE__BASEURL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__REMOTE__TIMEOUTSECONDS", "2")
    settings = load_settings()
    sync_index(settings)  # keyword data is still written
    searcher = open_searcher(settings)
    try:
        with pytest.raises(ApusError, match="unavailable"):
            searcher.search("garden", SearchOptions(mode="hybrid"))
        keyword_only = searcher.search("garden", SearchOptions(mode="keyword"))
        assert keyword_only.hits[0].path == "projects/garden.md"
    finally:
        searcher.close()


def test_fallback_none_makes_missing_local_embeddings_an_error(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apus.errors import ApusError

    monkeypatch.setenv("APUS_VAULT", str(vault))
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "auto")  # no model downloaded here
    sync_index(load_settings())
    searcher = open_searcher(load_settings())
    try:
        response = searcher.search("garden", SearchOptions(mode="hybrid"))
        assert (
            not response.legs["vector"].ran and "not downloaded" in response.legs["vector"].reason
        )
        assert response.hits[0].path == "projects/garden.md"
    finally:
        searcher.close()
    monkeypatch.setenv("APUS_MEMORY__SEARCH__FALLBACK", "none")
    strict = open_searcher(load_settings())
    try:
        with pytest.raises(ApusError, match="unavailable"):
            strict.search("garden", SearchOptions(mode="hybrid"))
    finally:
        strict.close()
