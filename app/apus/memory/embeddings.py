"""The embeddings line of `status`: ready, embedding (a first build), rebuilding (replacing an
old index), keyword-only, paused, unavailable, off; and how much search by meaning covers."""

from __future__ import annotations

import os

from apus.config import Settings
from apus.embed.base import EmbeddingError, probe, probe_budget
from apus.embed.providers import ProviderResolution, is_remote, known_failure
from apus.index.status import EmbeddingsState
from apus.index.store import Store
from apus.indexing.lock import writer_elsewhere
from apus.indexing.progress import SyncProgress
from apus.search.vector_leg import ProviderVectorLeg, coverage_sentence


def embeddings_state(
    settings: Settings,
    provider: ProviderResolution,
    leg: ProviderVectorLeg | None,
    *,
    running: SyncProgress | None = None,
    deep: bool = False,
) -> EmbeddingsState:
    """What search by meaning can do now. `running` is this process's embedding progress,
    when it is embedding; `deep` also probes the provider once within its budget."""
    if provider.embedder is None or leg is None:
        state = "off" if provider.state == "off" else "keyword-only"
        return EmbeddingsState(state, provider.reason, provider.fix)
    state = _semantic_state(settings, provider, leg, running)
    if deep:
        state = _with_probe(settings, provider, state)
    return state


def _semantic_state(
    settings: Settings,
    provider: ProviderResolution,
    leg: ProviderVectorLeg,
    running: SyncProgress | None,
) -> EmbeddingsState:
    embedder = provider.embedder
    assert embedder is not None
    try:
        identity = embedder.identity
        decision = leg.decision()
    except EmbeddingError as exc:
        state = "unavailable" if is_remote(settings.search.provider) else "keyword-only"
        return EmbeddingsState(state, exc.reason, exc.fix or "")
    vectors = leg.vectors.count(identity.key())
    stopped = known_failure(embedder)
    if stopped is not None:  # the server crashed again and again: not restarted for now
        return EmbeddingsState("unavailable", stopped.reason, stopped.fix or "", identity, vectors)
    if decision is None:
        return EmbeddingsState(
            "keyword-only", "not indexed yet", "apus memory index", identity, vectors
        )
    if decision.action == "serve":
        health = leg.vectors.health(identity.key())
        if not health.usable:
            return EmbeddingsState(
                "keyword-only",
                f"vector search is unavailable: {health.reason}; the store still holds "
                "every vector",
                "apus memory index",
                identity,
                vectors,
            )
        return EmbeddingsState("ready", identity=identity, vectors=vectors)
    if decision.action == "pause":
        return EmbeddingsState("paused", decision.reason, decision.fix, identity, vectors)
    done, total = leg.progress()
    # The vectors FAISS holds for this identity are served meanwhile (the vector leg's rule).
    coverage = vectors / max(total, vectors) if vectors else None
    covers = f"; {coverage_sentence(coverage)}" if coverage is not None else ""
    embedding_here = running is not None and running.phase == "embed"
    if embedding_here or writer_elsewhere(settings.index_dir()) is not None:
        return EmbeddingsState(
            "embedding" if decision.action == "fresh" else "rebuilding",
            (decision.reason or "embedding the vault") + covers,
            identity=identity,
            vectors=vectors,
            done=done,
            total=total,
            eta_seconds=running.eta_seconds if running is not None and embedding_here else None,
            coverage=coverage,
        )
    # Vectors are incomplete and nobody is making them: say why, never "rebuilding".
    percent = 100 * done // max(total, 1)
    failure = leg.embed_failure()
    if failure is not None:
        reason = f"embedding stopped at {percent}%: {failure[0]}"
        fix = failure[1] or "apus memory index"
    else:
        why = decision.reason or "embeddings are incomplete"
        reason = f"{why}: {percent}% done, waiting for the next sync"
        fix = "apus memory index"
    return EmbeddingsState(
        "keyword-only",
        reason + covers,
        fix,
        identity,
        vectors,
        done=done,
        total=total,
        coverage=coverage,
    )


def _with_probe(
    settings: Settings, provider: ProviderResolution, state: EmbeddingsState
) -> EmbeddingsState:
    embedder = provider.embedder
    assert embedder is not None
    budget = probe_budget(is_remote(settings.search.provider))
    budget = float(os.environ.get("APUS_PROBE_TIMEOUT_S", budget))
    result = probe(embedder, budget)
    cache_entries = None
    if Store.exists(settings.index_dir()):
        store = Store(settings.index_dir(), readonly=True)
        try:
            cache_entries = store.cache_size()
        finally:
            store.close()
    name, reason, fix = state.state, state.reason, state.fix
    if not result.ok and name == "ready":
        # Identity came without a request (a hosted API's known width); the probe is the
        # first real call, and a failing one means search cannot use vectors now.
        name = "unavailable" if is_remote(settings.search.provider) else "keyword-only"
        reason = result.error or "the embedding probe failed"
        fix = "apus memory status --deep  (after fixing the provider)"
    return EmbeddingsState(
        name,
        reason,
        fix,
        state.identity,
        state.vectors,
        state.done,
        state.total,
        state.eta_seconds,
        describe=embedder.describe(),
        probe=result,
        cache_entries=cache_entries,
        coverage=state.coverage,
    )
