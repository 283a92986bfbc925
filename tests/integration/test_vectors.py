"""Semantic search end to end: the tiny real GGUF behind the managed server, FAISS, identity."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from apus.config import Settings, SettingsSource, load_settings
from apus.embed.providers import resolve_provider
from apus.index.identity import stored_identity
from apus.index.store import Store
from apus.indexing.progress import SyncProgress
from apus.indexing.request import SyncRequest
from apus.memory import Memory
from apus.memory.session import MemoryEvent
from apus.memory.sync_queue import SyncFinished, SyncStarted
from apus.search.options import SearchOptions
from support.holds import Hold
from support.ports import refusing_port
from support.recording_server import RecordingServer
from support.tiny_gguf import write_tiny_gguf
from support.vaults import embeddings, local_model_settings, search_response, sync, write_note

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
    report = sync(settings)
    assert report.embedding.state == "done" and report.embedding.message() == ""
    assert report.embedded == report.chunks
    response = search_response(settings, "router closet", mode="hybrid")
    assert response.legs["vector"].ran, response.legs["vector"].reason
    assert response.legs["keyword"].ran
    assert response.hits[0].path == "projects/network.md"
    assert "vector" in response.hits[0].legs
    state = embeddings(settings)
    assert state.state == "ready"
    assert state.vectors == report.chunks
    assert state.identity is not None
    assert state.identity.prefix_scheme.startswith("embeddinggemma")
    # A second sync embeds nothing: every vector comes from the store.
    again = sync(settings)
    assert again.embedded == 0
    # --reembed ignores the cache: every chunk goes to the model again, and search still works.
    forced = sync(settings, SyncRequest(reembed=True))
    assert forced.embedded == report.chunks
    assert embeddings(settings).vectors == report.chunks


def test_prefix_scheme_change_reembeds_once_while_keyword_serves(
    vault: Path, tiny_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    old = local_model_settings(
        vault, tiny_models[0], monkeypatch, APUS_MEMORY__SEARCH__LOCAL__PREFIXSCHEME="none"
    )
    sync(old)
    store = Store(old.index_dir(), readonly=True)
    before_cache = store.cache_size()
    old_identity = stored_identity(store)
    store.close()
    assert old_identity is not None and old_identity.prefix_scheme.startswith("none")

    # The family comes from the GGUF again: prefixes on.
    new = local_model_settings(vault, tiny_models[0], monkeypatch)
    # Nothing embeds yet: it says so instead of "rebuilding".
    waiting = embeddings(new)
    assert waiting.state == "keyword-only"
    assert waiting.reason.startswith("task prefixes changed")
    assert waiting.reason.endswith("0% done, waiting for the next sync")
    # A session from the environment, as the CLI opens it: the first search starts the one
    # background re-embed in a detached `apus memory index`.
    hold = Hold(tmp_path / "hold")  # the detached run stops before its first vectors
    for name, value in hold.env("embed:0").items():
        monkeypatch.setenv(name, value)
    with Memory(SettingsSource(vault=vault)) as memory:
        during = memory.search("router closet", SearchOptions(mode="hybrid"))
        assert during.legs["keyword"].ran
        assert during.hits and during.hits[0].path == "projects/network.md"
        hold.wait_held()
        # The rebuild runs in another process, and this one says so; search is by words.
        writer = (new.index_dir() / "writer.pid").read_text(encoding="utf-8").strip()
        assert writer != str(os.getpid())
        assert memory.embeddings().state == "rebuilding"
        held = memory.search("router closet", SearchOptions(mode="hybrid"))
        assert held.legs["keyword"].ran and not held.legs["vector"].ran
        assert held.legs["vector"].reason == (
            "embeddings are being built (0%); keyword results meanwhile"
        )
        assert held.hits and held.hits[0].path == "projects/network.md"
        hold.release()
        deadline = time.monotonic() + 120
        while memory.embeddings().state != "ready":
            assert time.monotonic() < deadline, "the background re-embed did not finish"
            time.sleep(0.5)
        after = memory.search("router closet", SearchOptions(mode="hybrid"))
        assert after.legs["vector"].ran
    store = Store(new.index_dir(), readonly=True)
    try:
        chunks = store.counts()[1]
        # Exactly one fresh vector per chunk (+ the trusted trigger): old entries never reused.
        assert store.cache_size() == before_cache + chunks + 1
        assert stored_identity(store).prefix_scheme.startswith("embeddinggemma")  # type: ignore[union-attr]
    finally:
        store.close()
    # Once rebuilt, opening again starts nothing: the decision is "serve".
    assert embeddings(new).state == "ready"
    stop_server(new)


def _unprefixed_index(
    vault: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Settings, int]:
    """An index embedded before task prefixes existed; the settings of today (prefixes on,
    from the GGUF) and the store's cache size."""
    old = local_model_settings(
        vault, model, monkeypatch, APUS_MEMORY__SEARCH__LOCAL__PREFIXSCHEME="none"
    )
    sync(old)
    store = Store(old.index_dir(), readonly=True)
    try:
        return local_model_settings(vault, model, monkeypatch), store.cache_size()
    finally:
        store.close()


def test_a_live_session_rebuilds_unprefixed_vectors_once_in_its_queue(
    vault: Path, tiny_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # As the app and `apus mcp` run: the one rebuild goes to the session's own sync queue.
    new, before_cache = _unprefixed_index(vault, tiny_models[0], monkeypatch)
    hold = Hold(tmp_path / "hold")  # the rebuild stops before its first batch of vectors
    for name, value in hold.env("embed:0").items():
        monkeypatch.setenv(name, value)
    events: list[MemoryEvent] = []
    finished = threading.Event()

    def hear(event: MemoryEvent) -> None:
        events.append(event)
        if isinstance(event, SyncFinished):
            finished.set()

    with Memory(settings=new) as memory:
        memory.subscribe(hear)
        memory.start_live(watch=False)
        point = hold.wait_held()
        assert point["total"] > 0
        # The rebuild is running, in this process (its queue holds the writer lock)...
        assert [type(e) for e in events[:1]] == [SyncStarted]
        assert not finished.is_set()
        writer = (new.index_dir() / "writer.pid").read_text(encoding="utf-8").split()
        assert writer[0] == str(os.getpid())
        assert memory.embeddings().state == "rebuilding"
        # ...and search answers by words meanwhile: the vector leg stays off, saying why.
        during = memory.search("router closet", SearchOptions(mode="hybrid"))
        assert during.legs["keyword"].ran and not during.legs["vector"].ran
        assert during.legs["vector"].reason == (
            "embeddings are being built (0%); keyword results meanwhile"
        )
        assert during.hits and during.hits[0].path == "projects/network.md"
        hold.release()
        assert finished.wait(120), "the queued rebuild did not finish"
        report = next(e for e in events if isinstance(e, SyncFinished)).report
        assert report is not None and report.embedding.state == "done"
        assert memory.embeddings().state == "ready"
        after = memory.search("router closet", SearchOptions(mode="hybrid"))
        assert after.legs["vector"].ran, after.legs["vector"].reason
    store = Store(new.index_dir(), readonly=True)
    try:
        # Once: one fresh vector per chunk (+ the trusted trigger), the old ones never reused.
        assert store.cache_size() == before_cache + store.counts()[1] + 1
    finally:
        store.close()
    assert embeddings(new).state == "ready"
    stop_server(new)


def test_model_change_pauses_vectors_and_force_rebuilds(
    vault: Path, tiny_models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = local_model_settings(vault, tiny_models[0], monkeypatch)
    sync(first)
    second = local_model_settings(vault, tiny_models[1], monkeypatch)
    state = embeddings(second)
    assert state.state == "paused"
    assert state.fix == "apus memory index --force"
    response = search_response(second, "router", mode="hybrid")
    assert not response.legs["vector"].ran
    assert "paused" in response.legs["vector"].reason
    assert response.legs["vector"].fix == "apus memory index --force"
    assert response.hits[0].path == "projects/network.md"  # keyword still answers
    report = sync(second)  # without --force nothing is re-embedded
    assert report.embedded == 0
    assert report.embedding.state == "paused" and "paused" in report.embedding.message()
    forced = sync(second, SyncRequest(force=True))
    assert forced.embedded == forced.chunks
    assert embeddings(second).state == "ready"
    with Memory(settings=second) as memory:
        assert memory.status().embeddings.state == "ready"


@pytest.mark.slow
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
    killed = threading.Event()
    with Memory(settings=settings) as memory:
        embedder = memory.provider.embedder
        assert embedder is not None

        def on_progress(event: SyncProgress) -> None:
            if event.phase == "embed" and event.done > 0 and not killed.is_set():
                os.kill(int(embedder.describe()["pid"]), signal.SIGKILL)
                killed.set()

        memory.sync(progress=on_progress)
        assert killed.is_set()
        hits = memory.search("word123", SearchOptions(mode="keyword")).hits
        assert hits and hits[0].path == "notes/n123.md"
        # Whatever the first run managed, a later sync (server restarted) completes it.
        memory.sync()
        state = memory.embeddings()
        assert state.state == "ready"
        assert state.vectors == memory.status().chunks
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
        sync(settings)
        sent = server.inputs()
        assert (
            "title: Garden | text: # Garden\n\nTomatoes and basil grow on the balcony in "
            "summer." in sent
        )
        assert any(s.startswith("title: none | text: Baked bread today") for s in sent)
        search_response(settings, "balcony plants", mode="hybrid")
        assert server.inputs()[-1] == "task: search result | query: balcony plants"


def test_explicit_remote_provider_unreachable_is_reported(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with refusing_port() as port:
        from apus.errors import ApusError

        monkeypatch.setenv("APUS_VAULT", str(vault))
        monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "openai-compatible")
        monkeypatch.setenv("APUS_MEMORY__SEARCH__MODEL", "some-model")
        monkeypatch.setenv("APUS_MEMORY__SEARCH__REMOTE__BASEURL", f"http://127.0.0.1:{port}/v1")
        monkeypatch.setenv("APUS_MEMORY__SEARCH__REMOTE__TIMEOUTSECONDS", "2")
        settings = load_settings()
        report = sync(settings)  # keyword data is still written
        assert report.embedding.state == "unavailable" and report.chunks > 0
        with Memory(settings=settings) as memory:
            with pytest.raises(ApusError, match="unavailable"):
                memory.search("garden", SearchOptions(mode="hybrid"))
            keyword_only = memory.search("garden", SearchOptions(mode="keyword"))
            assert keyword_only.hits[0].path == "projects/garden.md"


def test_fallback_none_makes_missing_local_embeddings_an_error(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apus.errors import ApusError

    monkeypatch.setenv("APUS_VAULT", str(vault))
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "auto")  # no model downloaded here
    sync(load_settings())
    response = search_response(load_settings(), "garden", mode="hybrid")
    assert not response.legs["vector"].ran and "not downloaded" in response.legs["vector"].reason
    assert response.legs["vector"].fix.startswith("apus models pull")
    assert response.hits[0].path == "projects/garden.md"
    monkeypatch.setenv("APUS_MEMORY__SEARCH__FALLBACK", "none")
    with pytest.raises(ApusError, match="unavailable"):
        search_response(load_settings(), "garden", mode="hybrid")


# Two notes whose passages are sent as the same text (a file stem is no title, so both are
# "title: none | text: ..."), and one with the same body under a title of its own.
COPIES = {
    "weekly/a.md": "Weekly review: what went well, what to change, what to drop.\n",
    "weekly/b.md": "Weekly review: what went well, what to change, what to drop.\n",
    "weekly/titled.md": "---\ntitle: Review\n---\n"
    "Weekly review: what went well, what to change, what to drop.\n",
    "notes/other.md": "The router lives in the hallway closet.\n",
}
COPY_TEXT = "title: none | text: Weekly review: what went well, what to change, what to drop."


@pytest.mark.parametrize("batch_chunks", [16, 1])
def test_identical_passages_reach_the_model_once(
    tmp_path: Path,
    tiny_models: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    batch_chunks: int,
) -> None:
    """In one batch (16) or in batches of their own (1): the managed server is sent each
    distinct text once, and every chunk, the copies included, gets a vector."""
    from apus.indexing import embedding

    root = tmp_path / "vault"
    for rel, text in COPIES.items():
        write_note(root, rel, text)
    settings = local_model_settings(root, tiny_models[0], monkeypatch)
    monkeypatch.setattr(embedding, "EMBED_BATCH_CHUNKS", batch_chunks)
    with Memory(settings=settings) as memory:
        embedder = memory.provider.embedder
        assert embedder is not None, memory.provider.reason
        sent: list[str] = []
        real_embed = embedder.embed

        def counting(texts: list[str], **kwargs: object) -> object:
            sent.extend(texts)
            return real_embed(texts, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(embedder, "embed", counting)
        report = memory.sync()
        assert report.embedding.state == "done", report.embedding.message()
        assert report.chunks == len(COPIES)
        assert sent.count(COPY_TEXT) == 1
        assert len(sent) == len(set(sent)) == len(COPIES) - 1
        assert report.embedded == len(COPIES) - 1
        state = memory.embeddings()
        assert state.state == "ready" and state.vectors == len(COPIES)
        # A third copy in a later sync is a cache hit: nothing is sent for it.
        write_note(root, "weekly/c.md", COPIES["weekly/a.md"])
        again = memory.sync()
        assert again.embedded == 0 and len(sent) == len(COPIES) - 1
        assert memory.embeddings().vectors == len(COPIES) + 1


def test_identical_passages_reach_a_remote_endpoint_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "vault"
    for rel, text in COPIES.items():
        write_note(root, rel, text)
    with RecordingServer(dims=16) as server:
        monkeypatch.setenv("APUS_VAULT", str(root))
        monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "openai-compatible")
        monkeypatch.setenv("APUS_MEMORY__SEARCH__MODEL", "embeddinggemma-300m")
        monkeypatch.setenv("APUS_MEMORY__SEARCH__REMOTE__BASEURL", server.url)
        settings = load_settings()
        report = sync(settings)
        # Documents only: the provider first asks for one query vector (its width).
        sent = [text for text in server.inputs() if text.startswith("title: ")]
        assert report.embedding.state == "done", report.embedding.message()
        assert sent.count(COPY_TEXT) == 1
        assert len(sent) == len(set(sent)) == len(COPIES) - 1
        assert embeddings(settings).vectors == report.chunks == len(COPIES)
