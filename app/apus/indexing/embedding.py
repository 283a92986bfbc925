"""The embedding step of a sync: a vector for every chunk and trigger under the current identity.

It runs after the keyword data is committed (search by words already works), decides from the
stored identity whether these vectors may be built at all, embeds what is missing in
checkpointed batches (`embed_missing`: text from the cache or the provider, an image or audio
file from its bytes), embeds the trusted notes' trigger phrases (`embed_triggers`), records
the identity once every chunk has a vector, and brings the FAISS file in line with the store.

The FAISS file grows as batches commit (`VectorAppender`), stamped with the identity being
built, so while a first embedding (or a prefix re-embed) runs, search by meaning already
covers the chunks embedded so far. Chunks are embedded in priority order (`embed_order`): the
curated MEMORY.md and USER.md first, then dated notes newest first, then the rest, so what a
search most likely asks about becomes searchable by meaning first, and an interrupted run
resumes in the same order (the order is computed again from what is still missing).
Progress counts chunks vault-wide (those with a vector already, plus this run's), so every
face shows one figure.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np

from apus.embed.base import Embedder, EmbeddingError, EmbeddingIdentity, EmbeddingUnavailable
from apus.embed.providers import ProviderResolution
from apus.errors import Problem
from apus.index.identity import decide, record_identity, stored_identity
from apus.index.store import Store
from apus.index.triggers import TRUSTED_FILES, trigger_text, triggers_of, trusted_files
from apus.index.vector_layout import layout_for
from apus.index.vectors import cache_key
from apus.indexing.holds import hold_point
from apus.indexing.media import embed_media_chunks, split_media
from apus.indexing.progress import Eta, ProgressCallback, SyncProgress
from apus.indexing.request import SyncRequest
from apus.indexing.vectors import VectorAppender, VectorWriter
from apus.vault.dates import date_from_path

# Chunks per checkpoint: each batch is embedded, cached and committed before the next, so a
# killed run resumes where it stopped. The embedder packs requests by tokens on its own.
EMBED_BATCH_CHUNKS = 16

EmbedState = Literal["done", "off", "unavailable", "paused", "failed", "cancelled"]


@dataclass(frozen=True)
class EmbedOutcome:
    """What the embedding step did; `problem` says why it stopped short, if it did (a failed
    one is what search and status report until an embedding completes: `index/readiness.py`)."""

    state: EmbedState
    embedded: int = 0  # chunks the provider embedded (cache hits excluded)
    problem: Problem | None = None
    vectors_rebuilt: str = ""  # why vectors.faiss was rebuilt from the store, if it was

    @property
    def ok(self) -> bool:
        """True unless embeddings were wanted and are not complete (provider none is fine)."""
        return self.state in ("done", "off")

    def message(self) -> str:
        """One line for a person: the reason, then the fix."""
        return "" if self.problem is None else self.problem.message()


def run_embedding(
    store: Store,
    index_dir: Path,
    provider: ProviderResolution,
    request: SyncRequest,
    *,
    cancel: threading.Event | None,
    emit: ProgressCallback,
) -> EmbedOutcome:
    """Embed what the store lacks; never raises for provider trouble (it is reported)."""
    embedder = provider.embedder
    if embedder is None:
        if provider.state == "off":
            return EmbedOutcome("off")
        return EmbedOutcome("unavailable", problem=Problem(provider.reason, provider.fix))
    try:
        identity = embedder.identity
        layout = layout_for(identity, provider.vector_dims, provider.vector_index)
    except EmbeddingError as exc:
        return EmbedOutcome("unavailable", problem=exc.problem)
    decision = decide(stored_identity(store), identity)
    if decision.action == "pause" and not request.force:
        return EmbedOutcome("paused", problem=Problem(decision.reason, decision.fix))
    if request.reembed:
        with store.transaction():
            store.forget_vectors(identity.key())
    eta = Eta()
    vectors = VectorWriter(index_dir)
    appender = VectorAppender(vectors, store, identity, layout)
    # Chunks that had a vector before this run: progress is the vault's, not the run's.
    before = store.vector_count(identity.key())

    committed = 0

    def on_progress(event: EmbedProgress) -> None:
        nonlocal committed
        appender.committed(event.done - committed)  # the batch is in the store: searchable
        committed = event.done
        eta_s = eta(event.done, event.total)
        emit(SyncProgress("embed", before + event.done, before + event.total, eta_s))

    outcome = _embed_chunks(store, provider, cancel, on_progress)
    if outcome.state == "done":
        outcome = _embed_triggers(store, provider, outcome)
    with store.transaction():
        store.record_embed_failure(outcome.problem if outcome.state == "failed" else None)
    complete = not store.chunks_missing_vectors(identity.key())
    if complete:
        with store.transaction():
            record_identity(store, identity)
        hold_point("identity")  # a test hook: the vectors are whole, the file not refreshed
    # Complete or not, the file ends holding every vector of this identity the store has:
    # a partial file is served as partial (its identity is the current one).
    vectors.refresh(store, identity, layout)
    if vectors.last_refresh.state == "rebuilt":
        outcome = replace(outcome, vectors_rebuilt=vectors.last_refresh.reason)
    if outcome.state == "done" and cancel is not None and cancel.is_set() and not complete:
        return replace(outcome, state="cancelled")
    return outcome


def _embed_chunks(
    store: Store,
    provider: ProviderResolution,
    cancel: threading.Event | None,
    on_progress: Callable[[EmbedProgress], None],
) -> EmbedOutcome:
    embedder = provider.embedder
    assert embedder is not None
    embedded = 0
    try:
        identity = embedder.identity
        order = embed_order(store.paths_missing_vectors(identity.key()))
        embedded = embed_missing(
            store, embedder, identity, cancel=cancel, progress=on_progress, order=order
        )
    except EmbeddingError as exc:
        return EmbedOutcome(
            "failed",
            embedded,
            Problem(
                f"embedding failed ({exc.reason}); keyword search is unaffected and the "
                f"remaining chunks are embedded {_when_again(exc)}",
                exc.fix,
            ),
        )
    return EmbedOutcome("done", embedded)


def _when_again(exc: EmbeddingError) -> str:
    # A provider that cannot start (a server stopped after crashes) needs a fix first.
    return "once it works again" if isinstance(exc, EmbeddingUnavailable) else "on the next sync"


def _embed_triggers(
    store: Store, provider: ProviderResolution, outcome: EmbedOutcome
) -> EmbedOutcome:
    embedder = provider.embedder
    assert embedder is not None
    try:
        embed_triggers(store, embedder, embedder.identity)
    except EmbeddingError as exc:
        return EmbedOutcome(
            "failed",
            outcome.embedded,
            Problem(f"trigger embedding failed ({exc.reason})", exc.fix),
        )
    return outcome


def embed_order(chunks: Sequence[tuple[int, str]]) -> list[int]:
    """Chunk ids (given as (id, note path), in id order) in the order to embed them.

    First the root MEMORY.md and USER.md (curated, and what recall asks about), then dated
    notes (`YYYY-MM-DD[-slug].md` at any depth) newest first, then everything else; within
    one note and among equals, by id (the order the chunks were written: reading order)."""

    def rank(item: tuple[int, int, str]) -> tuple[int, int, str, int]:
        position, _chunk_id, path = item
        if path in TRUSTED_FILES:
            return (0, TRUSTED_FILES.index(path), "", position)
        day = date_from_path(path)
        if day is not None:
            return (1, -day.toordinal(), path, position)
        return (2, 0, "", position)

    ranked = sorted(((i, cid, path) for i, (cid, path) in enumerate(chunks)), key=rank)
    return [chunk_id for _position, chunk_id, _path in ranked]


@dataclass(frozen=True)
class EmbedProgress:
    done: int
    total: int
    cached: int


def embed_missing(
    store: Store,
    embedder: Embedder,
    identity: EmbeddingIdentity,
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[EmbedProgress], None] | None = None,
    order: Sequence[int] | None = None,
) -> int:
    """Give every chunk a vector for `identity`, from the cache or the provider.

    `order` lists the chunks still missing a vector in the order to embed them (default: by
    id). Returns how many texts the provider embedded: identical passages are sent once, and
    cache hits not at all. Raises the provider's error after committing what was done, so the
    next run resumes from there.
    """
    key = identity.key()
    missing = list(order) if order is not None else store.chunks_missing_vectors(key)
    total = len(missing)
    done = cached_total = embedded = 0
    if progress is not None and total:
        progress(EmbedProgress(0, total, 0))  # the first batch can take a while on a CPU
    for start in range(0, total, EMBED_BATCH_CHUNKS):
        if cancel is not None and cancel.is_set():
            break
        ids = missing[start : start + EMBED_BATCH_CHUNKS]
        chunks = store.chunks_by_id(ids)
        ordered, media_chunks = split_media([chunks[i] for i in ids if i in chunks])
        media = embed_media_chunks(store, embedder, identity, media_chunks)
        texts = [embedder.document_text(c.text, title_for_prefix(c.title, c.path)) for c in ordered]
        keys = [cache_key(identity, text) for text in texts]
        todo = _uncached(store, keys)
        fresh: list[tuple[str, np.ndarray]] = []
        if todo:
            vectors = embedder.embed([texts[i] for i in todo], kind="document")
            fresh = [(keys[i], vectors[row]) for row, i in enumerate(todo)]
        with store.transaction():
            store.put_vectors(fresh)
            store.set_chunk_vectors((c.id, key, k) for c, k in zip(ordered, keys, strict=True))
        done += len(ids)
        cached_total += len(ordered) - len(todo) + media.cached
        embedded += len(todo) + media.embedded
        if progress is not None:
            progress(EmbedProgress(done, total, cached_total))
    return embedded


def _uncached(store: Store, keys: Sequence[str]) -> list[int]:
    """Positions of the keys to embed: those without a cached vector, each key once.

    The cache holds a text's vector from the batch that embedded it on, so identical passages
    (templates, boilerplate, a copied note) in later batches are hits; identical passages in
    one batch would all be sent, so only the first of them is."""
    cached = store.cached_vectors(keys)
    first: dict[str, int] = {}
    for index, key in enumerate(keys):
        if key not in cached:
            first.setdefault(key, index)
    return list(first.values())


def title_for_prefix(title: str, path: str) -> str | None:
    """A note's own title for the document prefix; a bare file stem is not a title."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return None if not title or title == stem else title


def embed_triggers(store: Store, embedder: Embedder, identity: EmbeddingIdentity) -> int:
    """Make sure every trusted trigger has a cached vector; returns how many were embedded."""
    texts = [
        trigger_text(embedder, trigger)
        for record in trusted_files(store)
        for trigger, _chunk in triggers_of(store, record)
    ]
    keys = [cache_key(identity, text) for text in texts]
    todo = _uncached(store, keys)
    if not todo:
        return 0
    vectors = embedder.embed([texts[i] for i in todo], kind="document")
    with store.transaction():
        store.put_vectors((keys[i], vectors[row]) for row, i in enumerate(todo))
    return len(todo)
