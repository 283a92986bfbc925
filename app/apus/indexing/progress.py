"""Progress of an index sync: its phases, their labels, and the time left."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Phase = Literal["scan", "index", "large", "sessions", "keyword", "embed"]

# What each phase is called wherever a person sees it (the shell's bar, the app's status bar).
PHASE_LABELS: dict[str, str] = {
    "scan": "Scanning notes",
    "index": "Reading notes",
    "large": "Chunking a large note",  # done/total: its characters (a huge note takes a while)
    "sessions": "Reading transcripts",
    "keyword": "Building keyword index",
    "embed": "Embedding passages",
}
# Phases that only look for changes (or for transcripts to read): over an index a finished
# sync left complete, nothing is being built yet, so nobody is told "still indexing".
LOOKING_PHASES = frozenset({"scan", "sessions"})


@dataclass(frozen=True)
class SyncProgress:
    phase: Phase
    done: int
    total: int  # 0 while the size is not known yet
    eta_seconds: float | None = None

    @property
    def label(self) -> str:
        return PHASE_LABELS.get(self.phase, self.phase)

    @property
    def looking(self) -> bool:
        """Whether the sync only looks for what changed so far (it builds nothing yet)."""
        return self.phase in LOOKING_PHASES


ProgressCallback = Callable[[SyncProgress], None]


def ignore_progress(_event: SyncProgress) -> None:
    """The callback of a sync nobody watches."""


class Eta:
    """Time left for `total` items from the rate so far (None until there is a rate)."""

    # Below this much elapsed time the rate is mostly start-up cost: no estimate yet.
    MIN_ELAPSED_S = 0.5

    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, done: int, total: int) -> float | None:
        elapsed = time.monotonic() - self.started
        if done <= 0 or elapsed < self.MIN_ELAPSED_S:
            return None
        return max(0.0, (total - done) * elapsed / done)
