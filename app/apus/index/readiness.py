"""Can vectors answer now, and how much? The one decision search and status put in their words.

Read only: it combines the stored identity's decision, the vectors made so far, the last
embedding step's failure and whether anyone is embedding now. "Building" is said only while
something builds; incomplete vectors that nobody is making say why they stopped. While
vectors of the current identity are incomplete, those FAISS already holds are served as a
partial set: `coverage` is the share of passages they cover, and `percent_done` the one
figure of progress every face shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from apus.errors import NO_PROBLEM, Problem
from apus.index.identity import IdentityDecision

ReadinessState = Literal["ready", "building", "failed", "waiting", "paused", "absent"]

NOT_INDEXED = Problem(
    "the vault has not been indexed yet (run `apus memory index`)", "apus memory index"
)
_SYNC_FIX = "apus memory index"


@dataclass(frozen=True)
class VectorReadiness:
    """ready; building (with progress); failed (the last embedding step's Problem); waiting
    (incomplete, nobody embedding, nothing failed); paused (another identity's vectors);
    absent (no index yet)."""

    state: ReadinessState
    problem: Problem = NO_PROBLEM  # why not ready (for building: what is being made)
    done: int = 0
    total: int = 0
    # Building the first vectors of this vault, not replacing others: taken from the same
    # decision as `state`, since the identity is recorded the moment the last batch lands.
    first_build: bool = False

    @property
    def percent(self) -> int:
        return percent_done(self.done, self.total)

    @property
    def incomplete(self) -> bool:
        """Vectors of the current identity are missing (being built, stopped or awaited):
        those already made are served meanwhile."""
        return self.state in ("building", "failed", "waiting")

    def coverage(self, served: int) -> float | None:
        """The share of passages `served` vectors of the current identity cover while the
        rest are missing (None: ready, so all; or none served). The store's count of chunks
        may trail FAISS's for a moment (a note removed meanwhile): never above 1."""
        if not self.incomplete or served <= 0:
            return None
        return served / max(self.total, served)


def percent_done(done: int, total: int) -> int:
    """`done` of `total` as a whole percent, rounded down (0 of nothing is 0%)."""
    return 100 * done // max(total, 1)


def vector_readiness(
    decision: IdentityDecision | None,
    *,
    progress: Callable[[], tuple[int, int]],
    failure: Callable[[], Problem | None],
    building: Callable[[], bool],
) -> VectorReadiness:
    """`decision` for the stored vectors (None before any index). The rest is asked only
    when vectors are incomplete (a search asks on every query): `progress` gives (chunks
    with a vector of this identity, chunks); `failure` the last embedding step's Problem,
    until one completes; `building` whether this process or another embeds the index now."""
    if decision is None:
        return VectorReadiness("absent", NOT_INDEXED)
    if decision.action == "serve":
        return VectorReadiness("ready")
    if decision.action == "pause":
        return VectorReadiness("paused", Problem(decision.reason, decision.fix))
    done, total = progress()
    if building():
        why = Problem(decision.reason or "embedding the vault")
        return VectorReadiness("building", why, done, total, first_build=decision.action == "fresh")
    percent = percent_done(done, total)
    stopped_by = failure()
    if stopped_by is not None:
        stopped = Problem(
            f"embedding stopped at {percent}%: {stopped_by.reason}", stopped_by.fix or _SYNC_FIX
        )
        return VectorReadiness("failed", stopped, done, total)
    incomplete = decision.reason or "embeddings are incomplete"
    waiting = Problem(f"{incomplete}: {percent}% done, waiting for the next sync", _SYNC_FIX)
    return VectorReadiness("waiting", waiting, done, total)
