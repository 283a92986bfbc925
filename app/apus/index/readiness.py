"""Can vectors answer now? The one decision search, status and sync put in their own words.

Read only: it combines the stored identity's decision, the vectors made so far, the last
embedding step's failure and whether anyone is embedding now. "Building" is said only while
something builds; incomplete vectors that nobody is making say why they stopped.
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
        return 100 * self.done // max(self.total, 1)


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
    percent = 100 * done // max(total, 1)
    stopped_by = failure()
    if stopped_by is not None:
        stopped = Problem(
            f"embedding stopped at {percent}%: {stopped_by.reason}", stopped_by.fix or _SYNC_FIX
        )
        return VectorReadiness("failed", stopped, done, total)
    incomplete = decision.reason or "embeddings are incomplete"
    waiting = Problem(f"{incomplete}: {percent}% done, waiting for the next sync", _SYNC_FIX)
    return VectorReadiness("waiting", waiting, done, total)
