"""The embeddings line of `status`: ready, embedding (a first build), rebuilding (replacing an
old index), keyword-only, paused, unavailable, off; and how much search by meaning covers."""

from __future__ import annotations

import os

from apus.config import Settings
from apus.embed.base import EmbeddingError, probe, probe_budget
from apus.embed.providers import ProviderResolution, is_remote, known_failure
from apus.index.status import EmbeddingsState, EmbeddingsStateName
from apus.index.store import Store
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
    when it is embedding (its ETA is shown); `deep` also probes the provider once within its
    budget."""
    if provider.embedder is None or leg is None:
        name: EmbeddingsStateName = "off" if provider.state == "off" else "keyword-only"
        return EmbeddingsState(name, provider.reason, provider.fix)
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
    """The vectors' readiness (`index/readiness.py`) in status's words."""
    embedder = provider.embedder
    assert embedder is not None
    try:
        identity = embedder.identity
        readiness = leg.readiness()
        vector_key = leg.layout(identity).key(identity)
    except EmbeddingError as exc:
        name: EmbeddingsStateName = (
            "unavailable" if is_remote(settings.search.provider) else "keyword-only"
        )
        return EmbeddingsState(name, exc.reason, exc.fix)
    vectors = leg.vectors.count(vector_key)
    stopped = known_failure(embedder)
    if stopped is not None:  # the server crashed again and again: not restarted for now
        return EmbeddingsState("unavailable", stopped.reason, stopped.fix, identity, vectors)
    problem = readiness.problem
    if readiness.state == "absent":
        return EmbeddingsState(
            "keyword-only", "not indexed yet", "apus memory index", identity, vectors
        )
    if readiness.state == "ready":
        health = leg.vectors.health(vector_key)
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
    if readiness.state == "paused":
        return EmbeddingsState("paused", problem.reason, problem.fix, identity, vectors)
    done, total = readiness.done, readiness.total
    coverage = readiness.coverage(vectors)  # what FAISS holds is served meanwhile
    covers = f"; {coverage_sentence(coverage)}" if coverage is not None else ""
    if readiness.state == "building":
        return EmbeddingsState(
            "embedding" if readiness.first_build else "rebuilding",
            problem.reason + covers,
            identity=identity,
            vectors=vectors,
            done=done,
            total=total,
            eta_seconds=running.eta_seconds
            if running is not None and running.phase == "embed"
            else None,
            coverage=coverage,
        )
    # failed or waiting: incomplete and nobody is making them, so never "rebuilding".
    return EmbeddingsState(
        "keyword-only",
        problem.reason + covers,
        problem.fix,
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
