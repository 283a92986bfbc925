"""The domain's front door for the CLI and the TUI: one Indexer/Searcher wiring for both.

It resolves the embedding provider once, hooks the vector stage into the Indexer, gives the
Searcher its vector leg, and reports the embeddings state that `status` and the UI show.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from typing import Any

from apus import paths
from apus.config import Settings
from apus.embed.base import (
    EmbeddingError,
    EmbeddingIdentity,
    probe,
)
from apus.embed.providers import ProviderResolution, is_remote, resolve_provider
from apus.errors import ApusError
from apus.index.identity import IdentityDecision, decide, record_identity, stored_identity
from apus.index.lock import WriterLock
from apus.index.status import IndexStatus, collect_status
from apus.index.store import Store
from apus.index.sync import Indexer, ProgressCallback, SyncProgress, SyncReport
from apus.index.vectors import EmbedProgress, VectorIndex, embed_missing
from apus.search.engine import Searcher, VectorLeg
from apus.search.recall import RecallEntry, embed_triggers, recall

PROBE_BUDGET_REMOTE_S = 60.0  # a remote endpoint that takes longer than this is not usable
PROBE_BUDGET_LOCAL_S = 300.0  # a cold local server may load a model from a slow disk first


class ProviderUnavailableError(ApusError):
    """An explicitly configured remote provider failed: say so, never degrade silently."""


def sync_index(
    settings: Settings,
    *,
    force: bool = False,
    cancel: threading.Event | None = None,
    progress: ProgressCallback | None = None,
    resolution: ProviderResolution | None = None,
    reembed: bool = False,
) -> SyncReport:
    """Update keyword data first (searchable at once), then vectors when embeddings are on.

    `reembed` throws away this model's cached vectors first, so every chunk is embedded
    again (for a model file changed in place, or a suspect cache).
    """
    resolution = resolution or resolve_provider(settings.search)
    index_dir = settings.index_dir()
    emit = progress or (lambda _event: None)

    def vector_stage(store: Store, report: SyncReport) -> None:
        embedder = resolution.embedder
        if embedder is None:
            if resolution.state == "keyword-only":
                fix = f" (fix: {resolution.fix})" if resolution.fix else ""
                report.embed_error = f"keyword only: {resolution.reason}{fix}"
            return
        try:
            identity = embedder.identity
        except EmbeddingError as exc:
            report.embed_error = exc.reason
            return
        decision = decide(stored_identity(store), identity)
        if decision.action == "pause" and not force:
            report.embed_error = f"{decision.reason}. Fix: {decision.fix}"
            return
        if reembed:
            with store.transaction():
                store.forget_vectors(identity.key())
        started = time.monotonic()

        def on_progress(event: EmbedProgress) -> None:
            elapsed = time.monotonic() - started
            eta = elapsed * (event.total - event.done) / event.done if event.done else None
            emit(SyncProgress("embed", event.done, event.total, eta))

        try:
            report.embedded = embed_missing(
                store, embedder, identity, cancel=cancel, progress=on_progress
            )
        except EmbeddingError as exc:
            report.embed_error = (
                f"embedding failed ({exc.reason}); keyword search is unaffected and the "
                "remaining chunks are embedded on the next sync"
            )
        try:
            embed_triggers(store, embedder, identity)
        except EmbeddingError as exc:
            report.embed_error = report.embed_error or f"trigger embedding failed ({exc.reason})"
        complete = not store.chunks_missing_vectors(identity.key())
        if complete:
            with store.transaction():
                record_identity(store, identity)
        if complete or decision.action == "serve":
            VectorIndex(index_dir).refresh(store, identity)

    return Indexer(settings).sync(
        force=force, cancel=cancel, progress=progress, after_keyword=vector_stage
    )


class ProviderVectorLeg(VectorLeg):
    """The Searcher's vector leg: query embedding through the provider, then FAISS."""

    def __init__(
        self, settings: Settings, resolution: ProviderResolution, *, owns_embedder: bool = False
    ) -> None:
        self.settings = settings
        self.resolution = resolution
        self.owns_embedder = owns_embedder
        self.index_dir = settings.index_dir()
        self.vectors = VectorIndex(self.index_dir)
        self.strict = is_remote(settings.search.provider) or settings.search.fallback == "none"
        # status() runs on every query: keep one connection and re-decide only after a commit.
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._decided: tuple[int, IdentityDecision] | None = None

    def identity(self) -> EmbeddingIdentity | None:
        return None if self.resolution.embedder is None else self.resolution.embedder.identity

    def decision(self) -> IdentityDecision | None:
        identity = self.identity()
        if identity is None:
            return None
        with self._lock:
            if self._store is None:
                if not Store.exists(self.index_dir):
                    return None
                self._store = Store(self.index_dir, readonly=True)
            version = self._store.data_version()
            if self._decided is None or self._decided[0] != version:
                self._decided = (version, decide(stored_identity(self._store), identity))
            return self._decided[1]

    def _unavailable(self, exc: EmbeddingError) -> ProviderUnavailableError:
        return ProviderUnavailableError(
            f"The embedding provider `{self.settings.search.provider}` is unavailable: "
            f"{exc.reason}",
            fix='apus memory status --deep  (or set memory.search.provider = "none")',
        )

    def status(self) -> tuple[bool, str]:
        if self.resolution.embedder is None:
            return False, self.resolution.reason
        try:
            decision = self.decision()
        except EmbeddingError as exc:
            if self.strict:
                raise self._unavailable(exc) from exc
            return False, exc.reason
        if decision is None:
            return False, "the vault has not been indexed yet (run `apus memory index`)"
        if decision.action == "serve":
            return True, ""
        if decision.action == "pause":
            return False, f"{decision.reason}. Fix: {decision.fix}"
        progress = embedding_progress(self.settings, self.identity())
        return False, f"embeddings are being built ({progress}); keyword results meanwhile"

    def search(self, query: str, k: int) -> dict[int, float]:
        embedder = self.resolution.embedder
        assert embedder is not None
        try:
            vector = embedder.embed([embedder.query_text(query)], kind="query")[0]
        except EmbeddingError as exc:
            if self.strict:
                raise self._unavailable(exc) from exc
            raise
        return self.vectors.search(vector, k, embedder.identity.key())

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
        if self.owns_embedder and self.resolution.embedder is not None:
            self.resolution.embedder.close()


def embedding_progress(settings: Settings, identity: EmbeddingIdentity | None) -> str:
    if identity is None or not Store.exists(settings.index_dir()):
        return "0%"
    store = Store(settings.index_dir(), readonly=True)
    try:
        _, chunks = store.counts()
        done = store.vector_count(identity.key())
    finally:
        store.close()
    return f"{100 * done // max(chunks, 1)}%"


def open_searcher(
    settings: Settings,
    *,
    resolution: ProviderResolution | None = None,
    start_rebuild: bool = True,
) -> Searcher:
    """A Searcher with its vector leg; starts the one-time background re-embed when due.

    A resolution passed in stays the caller's to close; one made here closes with the
    Searcher. `start_rebuild=False` suits a caller that runs its own syncs (the app).
    """
    owns = resolution is None
    resolution = resolution or resolve_provider(settings.search)
    leg = None
    if resolution.embedder is not None:
        leg = ProviderVectorLeg(settings, resolution, owns_embedder=owns)
        if start_rebuild:
            try:
                decision = leg.decision()
            except EmbeddingError:
                decision = None
            if decision is not None and decision.action == "reembed":
                start_background_sync(settings)
    reason = resolution.reason + (f" (fix: {resolution.fix})" if resolution.fix else "")
    strict = resolution.state == "keyword-only" and settings.search.fallback == "none"
    return Searcher(settings, vector_leg=leg or _OffLeg(reason, strict=strict))


class _OffLeg(VectorLeg):
    def __init__(self, reason: str, *, strict: bool = False) -> None:
        self.reason = reason
        self.strict = strict

    def status(self) -> tuple[bool, str]:
        if self.strict:
            raise ProviderUnavailableError(
                f"Embeddings are unavailable: {self.reason}",
                fix='fix the provider, or set memory.search.fallback = "keyword"',
            )
        return False, self.reason

    def search(self, query: str, k: int) -> dict[int, float]:
        return {}


def start_background_sync(settings: Settings) -> bool:
    """Run `apus memory index` in a detached process unless a writer is already at work."""
    index_dir = settings.index_dir()
    if WriterLock(index_dir, settings.vault_path()).is_held_elsewhere():
        return False
    if getattr(sys, "frozen", False):
        command = [sys.executable]
    else:
        command = [sys.executable, "-m", "apus.cli"]
    command += ["--vault", str(settings.vault_path()), "memory", "index", "--json"]
    log_dir = paths.log_dir()
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "background-index.log", "ab") as log:
        subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env=os.environ.copy(),
        )
    return True


def index_status(settings: Settings, *, deep: bool = False) -> IndexStatus:
    return collect_status(settings, embeddings_state(settings, deep=deep))


def embeddings_state(settings: Settings, *, deep: bool = False) -> dict[str, Any]:
    """The embeddings line of `status`: ready / rebuilding / keyword-only / paused / off."""
    resolution = resolve_provider(settings.search)
    embedder = resolution.embedder
    if embedder is None:
        state = "off" if resolution.state == "off" else "keyword-only"
        info = {"state": state, "reason": resolution.reason}
        if resolution.fix:
            info["fix"] = resolution.fix
        return info
    try:
        return _semantic_state(settings, resolution, deep=deep)
    finally:
        embedder.close()  # a probe started the server: leave no client registered


def _semantic_state(
    settings: Settings, resolution: ProviderResolution, *, deep: bool
) -> dict[str, Any]:
    embedder = resolution.embedder
    assert embedder is not None
    info: dict[str, Any] = {}
    leg = ProviderVectorLeg(settings, resolution)
    try:
        identity = embedder.identity
        decision = leg.decision()
        info.update(
            {
                "provider": identity.provider,
                "model": identity.model,
                "dims": identity.dims,
                "prefix_scheme": identity.prefix_scheme,
                "identity": identity.key(),
                "vectors": leg.vectors.count(identity.key()),
            }
        )
        if decision is None:
            info.update(state="keyword-only", reason="not indexed yet (run `apus memory index`)")
        elif decision.action == "serve":
            info["state"] = "ready"
        elif decision.action == "pause":
            info.update(state="paused", reason=decision.reason, fix=decision.fix)
        else:
            info.update(
                state="rebuilding",
                reason=decision.reason or "embedding the vault",
                progress=embedding_progress(settings, identity),
            )
    except EmbeddingError as exc:
        state = "unavailable" if is_remote(settings.search.provider) else "keyword-only"
        info.update(state=state, reason=exc.reason)
    finally:
        leg.close()
    if deep:
        info["describe"] = embedder.describe()
        budget = (
            PROBE_BUDGET_REMOTE_S if is_remote(settings.search.provider) else PROBE_BUDGET_LOCAL_S
        )
        budget = float(os.environ.get("APUS_PROBE_TIMEOUT_S", budget))
        result = probe(embedder, budget)
        info["probe"] = {
            "ok": result.ok,
            "seconds": round(result.seconds, 3),
            "dims": result.dims,
            "error": result.error,
        }
        if Store.exists(settings.index_dir()):
            store = Store(settings.index_dir(), readonly=True)
            try:
                info["cache_entries"] = store.cache_size()
            finally:
                store.close()
    return info


def recall_entries(settings: Settings, message: str) -> list[RecallEntry]:
    """Trigger recall over MEMORY.md / USER.md; the vector side only when vectors are served."""
    if not Store.exists(settings.index_dir()):
        return []
    # Trigger vectors are looked up by identity key, so a stale or missing set simply leaves
    # recall to keywords; no identity check (a request, for remote providers) is needed.
    embedder = resolve_provider(settings.search).embedder
    store = Store(settings.index_dir(), readonly=True)
    try:
        try:
            return recall(
                store,
                message,
                embedder=embedder,
                vector_weight=settings.search.query.hybrid.vector_weight,
            )
        except EmbeddingError:
            return recall(store, message, embedder=None)
    finally:
        store.close()
