"""The vector leg of a search: is it usable now, and the nearest chunks for a query.

Read-only: it embeds the query through the provider and reads FAISS and the store; building
vectors is the Indexer's job.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from apus.embed.base import EmbeddingError, EmbeddingIdentity
from apus.embed.providers import ProviderResolution
from apus.errors import NO_PROBLEM, Problem
from apus.index.identity import IdentityDecision, decide, stored_identity
from apus.index.readiness import VectorReadiness, vector_readiness
from apus.index.store import Store
from apus.index.vector_layout import VectorLayout, layout_for
from apus.index.vectors import VectorIndex


@dataclass(frozen=True)
class VectorAvailability:
    """Whether the vector leg can answer now; if not, why (`problem`), and whether the
    provider itself failed (as opposed to vectors that are not ready yet)."""

    usable: bool
    problem: Problem = NO_PROBLEM  # why not, when not usable
    provider_failed: bool = False
    # While vectors of the current identity are being built (a first embedding, a prefix
    # re-embed) the leg serves those already in FAISS: the share of passages they cover and
    # their chunk ids (None: every chunk is covered).
    coverage: float | None = None
    covered: frozenset[int] | None = None
    # Vectors made before task prefixes existed, and nobody rebuilding them: the next sync
    # re-embeds them once (the session asks for it when a search says so).
    reembed_due: bool = False


def coverage_sentence(coverage: float) -> str:
    """How much of the vault a partial vector set covers, in the words every face shows."""
    return (
        f"meaning search covers {percent_text(coverage)} of passages "
        "(MEMORY.md, USER.md and the newest dated notes first)"
    )


def percent_text(coverage: float) -> str:
    """A share as a whole percent, never 100% while something is missing nor 0% once any
    passage is covered."""
    percent = int(coverage * 100)
    return f"{max(1, percent) if coverage > 0 else 0}%"


class VectorLeg(Protocol):
    """What the Searcher needs from the vector side."""

    def availability(self) -> VectorAvailability: ...

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> dict[int, float]:
        """Chunk id -> cosine (among `allowed` chunk ids when given); raises EmbeddingError
        when the provider cannot embed."""
        ...

    def neighbours(self, chunk_ids: list[int], k: int) -> dict[int, float]:
        """Chunk id -> best cosine to any of `chunk_ids`' stored vectors (no embedding)."""
        ...

    def close(self) -> None: ...


class ProviderVectorLeg:
    """Query embedding through the session's provider, then FAISS."""

    def __init__(
        self,
        index_dir: Path,
        provider: ProviderResolution,
        building: Callable[[], bool] = lambda: False,
    ) -> None:
        """`building` says whether this process or another is embedding the index now:
        the session knows (searching never looks at the writer's lock itself)."""
        self.index_dir = index_dir
        self.provider = provider
        self.building = building
        self.vectors = VectorIndex(index_dir)
        # availability() runs on every query: one connection, re-decided only after a commit.
        self._lock = threading.Lock()
        self._store: Store | None = None
        self._decided: tuple[int, IdentityDecision] | None = None

    def identity(self) -> EmbeddingIdentity | None:
        embedder = self.provider.embedder
        return None if embedder is None else embedder.identity

    def layout(self, identity: EmbeddingIdentity) -> VectorLayout:
        """The width and kind vectors.faiss holds (raises EmbeddingUnavailable for a
        memory.search.vectorDims wider than the model)."""
        return layout_for(identity, self.provider.vector_dims, self.provider.vector_index)

    def vector_key(self) -> str | None:
        """What vectors.faiss's stamp must name for this provider and layout."""
        identity = self.identity()
        return None if identity is None else self.layout(identity).key(identity)

    def decision(self) -> IdentityDecision | None:
        """Serve, re-embed, pause or fresh for the stored vectors; None before any index."""
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

    def layout_changed(self) -> bool:
        """Whether vectors.faiss holds this identity's vectors at another width or kind
        than the settings ask for: one refresh rebuilds it from the store."""
        identity = self.identity()
        if identity is None:
            return False
        named = (self.vectors.stamp() or {}).get("identity")
        if not isinstance(named, str) or named.split(":", 1)[0] != identity.key():
            return False  # no file yet, or another model's: not a layout change
        return named != self.layout(identity).key(identity)

    def embed_failure(self) -> Problem | None:
        """Why the last sync's embedding stopped short, until one completes."""
        with self._lock:
            return self._store.embed_failure() if self._store is not None else None

    def progress(self) -> tuple[int, int]:
        """(chunks with a vector of this identity, chunks) while vectors are being built."""
        identity = self.identity()
        with self._lock:
            if identity is None or self._store is None:
                return 0, 0
            return self._store.vector_count(identity.key()), self._store.counts()[1]

    def readiness(self) -> VectorReadiness:
        """Whether the stored vectors can answer (raises EmbeddingError when the provider
        cannot say what it embeds with, or its layout cannot be searched)."""
        self.vector_key()  # a vectorDims the model cannot serve is said before any search
        return vector_readiness(
            self.decision(),
            progress=self.progress,
            failure=self.embed_failure,
            building=self.building,
        )

    def availability(self) -> VectorAvailability:
        """The readiness in a search's words: only vectors being made are "being built"."""
        provider = self.provider
        if provider.embedder is None:
            return VectorAvailability(
                False,
                Problem(provider.reason, provider.fix),
                provider_failed=provider.state != "off",
            )
        try:
            readiness = self.readiness()
        except EmbeddingError as exc:
            return VectorAvailability(False, exc.problem, provider_failed=True)
        if readiness.state == "ready":
            return VectorAvailability(True)
        if readiness.state in ("paused", "absent"):
            return VectorAvailability(False, readiness.problem)
        decision = self.decision()  # as readiness read it (kept until the store changes)
        due = (
            readiness.state != "building" and decision is not None and decision.action == "reembed"
        )
        # A first build or a prefix re-embed: vectors are on their way. Those FAISS already
        # holds are of the current identity (its stamp says so), never another model's or
        # prefix scheme's: serve them as a partial set.
        covered = self._covered()
        coverage = readiness.coverage(len(covered))  # None when none is covered
        if coverage is not None:
            return VectorAvailability(
                True,
                Problem(coverage_sentence(coverage)),
                coverage=coverage,
                covered=covered,
                reembed_due=due,
            )
        if readiness.state == "building":
            return VectorAvailability(
                False,
                Problem(
                    f"embeddings are being built ({readiness.percent}%); keyword results meanwhile"
                ),
            )
        return VectorAvailability(False, readiness.problem, reembed_due=due)

    def _covered(self) -> frozenset[int]:
        """Chunk ids FAISS holds for the current identity (read only when its stamp has any)."""
        key = self.vector_key()
        if key is None or not self.vectors.count(key):
            return frozenset()
        return self.vectors.ids(key)

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> dict[int, float]:
        embedder = self.provider.embedder
        if embedder is None:
            raise EmbeddingError(self.provider.reason, self.provider.fix)
        identity = embedder.identity
        layout = self.layout(identity)
        vector = embedder.embed([embedder.query_text(query)], kind="query")[0]
        return self.vectors.search(layout.fit(vector), k, layout.key(identity), allowed)

    def neighbours(self, chunk_ids: list[int], k: int) -> dict[int, float]:
        identity = self.identity()
        if identity is None or self.decision() is None:  # decision() opens the store
            return {}
        layout = self.layout(identity)
        with self._lock:
            if self._store is None:
                return {}
            stored = list(self._store.vectors_for_chunks(identity.key(), chunk_ids))
        best: dict[int, float] = {}
        for _chunk_id, vector in stored:
            for found, score in self.vectors.search(
                layout.fit(vector), k, layout.key(identity)
            ).items():
                if score > best.get(found, -2.0):
                    best[found] = score
        return best

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
