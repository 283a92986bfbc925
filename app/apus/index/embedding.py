"""The embedding step of a sync: a vector for every chunk and trigger under the current identity.

It runs after the keyword data is committed (search by words already works), decides from the
stored identity whether these vectors may be built at all, embeds what is missing in
checkpointed batches, records the identity once every chunk has a vector, and brings the FAISS
file in line with the store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from apus.embed.base import EmbeddingError, EmbeddingUnavailable
from apus.embed.providers import ProviderResolution
from apus.index.identity import decide, record_identity, stored_identity
from apus.index.progress import Eta, ProgressCallback, SyncProgress
from apus.index.store import Store
from apus.index.triggers import embed_triggers
from apus.index.vectors import EmbedProgress, VectorIndex, embed_missing

EmbedState = Literal["done", "off", "unavailable", "paused", "failed", "cancelled"]


@dataclass(frozen=True)
class EmbedOutcome:
    """What the embedding step did; `reason` and `fix` say why it stopped short, if it did."""

    state: EmbedState
    embedded: int = 0  # chunks the provider embedded (cache hits excluded)
    reason: str = ""
    fix: str = ""
    vectors_rebuilt: str = ""  # why vectors.faiss was rebuilt from the store, if it was

    @property
    def ok(self) -> bool:
        """True unless embeddings were wanted and are not complete (provider none is fine)."""
        return self.state in ("done", "off")

    def message(self) -> str:
        """One line for a person: the reason, then the fix."""
        if not self.reason:
            return ""
        return f"{self.reason} (fix: {self.fix})" if self.fix else self.reason


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
        return EmbedOutcome("unavailable", reason=provider.reason, fix=provider.fix)
    try:
        identity = embedder.identity
    except EmbeddingError as exc:
        return EmbedOutcome("unavailable", reason=exc.reason, fix=exc.fix or "")
    decision = decide(stored_identity(store), identity)
    if decision.action == "pause" and not request.force:
        return EmbedOutcome("paused", reason=decision.reason, fix=decision.fix)
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
        failed = outcome.state == "failed"
        store.record_embed_failure((outcome.reason, outcome.fix) if failed else None)
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
        embedded = embed_missing(
            store,
            embedder,
            embedder.identity,
            cancel=cancel,
            progress=on_progress,
        )
    except EmbeddingError as exc:
        return EmbedOutcome(
            "failed",
            embedded,
            reason=f"embedding failed ({exc.reason}); keyword search is unaffected and the "
            f"remaining chunks are embedded {_when_again(exc)}",
            fix=exc.fix or "",
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
            reason=f"trigger embedding failed ({exc.reason})",
            fix=exc.fix or "",
        )
    return outcome
