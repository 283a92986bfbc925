"""The embedding step of a sync: a vector for every chunk and trigger under the current identity.

It runs after the keyword data is committed (search by words already works), decides from the
stored identity whether these vectors may be built at all, embeds what is missing in
checkpointed batches, records the identity once every chunk has a vector, and brings the FAISS
file in line with the store.

Chunks are embedded in priority order (`embed_order`): the curated MEMORY.md and USER.md
first, then dated notes newest first, then the rest, so an interrupted or long first embedding
has spent its time on what a search most likely asks about.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from apus.embed.base import EmbeddingError, EmbeddingUnavailable
from apus.embed.providers import ProviderResolution
from apus.errors import Problem
from apus.index.identity import decide, record_identity, stored_identity
from apus.index.progress import Eta, ProgressCallback, SyncProgress
from apus.index.store import Store
from apus.index.triggers import TRUSTED_FILES, embed_triggers
from apus.index.vectors import EmbedProgress, VectorIndex, embed_missing
from apus.vault.dates import date_from_path

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


@dataclass(frozen=True)
class EmbedRequest:
    force: bool = False  # a forced rebuild may replace vectors of another identity
    reembed: bool = False  # drop this identity's cached vectors first: embed everything again


def run_embedding(
    store: Store,
    index_dir: Path,
    provider: ProviderResolution,
    request: EmbedRequest,
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
    except EmbeddingError as exc:
        return EmbedOutcome("unavailable", problem=exc.problem)
    decision = decide(stored_identity(store), identity)
    if decision.action == "pause" and not request.force:
        return EmbedOutcome("paused", problem=Problem(decision.reason, decision.fix))
    if request.reembed:
        with store.transaction():
            store.forget_vectors(identity.key())
    eta = Eta()

    def on_progress(event: EmbedProgress) -> None:
        emit(SyncProgress("embed", event.done, event.total, eta(event.done, event.total)))

    outcome = _embed_chunks(store, provider, cancel, on_progress)
    if outcome.state == "done":
        outcome = _embed_triggers(store, provider, outcome)
    with store.transaction():
        store.record_embed_failure(outcome.problem if outcome.state == "failed" else None)
    complete = not store.chunks_missing_vectors(identity.key())
    if complete:
        with store.transaction():
            record_identity(store, identity)
    if complete or decision.action == "serve":
        vectors = VectorIndex(index_dir)
        vectors.refresh(store, identity)
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
