"""Whether the index is still being built while the agent asks: the syncs this server runs,
as its progress events tell them, and a sync another process runs, as it leaves word.

An answer given while a sync builds the index (a first index above all) may miss notes that
are not read yet, or find by words what meaning would find later; without saying so, an
agent takes an empty answer for "memory has nothing on this". So from the moment this
server knows it will sync, every answer carries `indexing` until the index covers the vault:
`Starting` (queued, waiting for the writer lock, scanning), then reading notes, writing the
keyword index and embedding passages, with counts that move. Over an index a finished sync
left complete, looking for changes is not indexing: only reading what changed, writing it
and embedding it are said.
"""

from __future__ import annotations

import os
import threading

from apus.agents.answers import Indexing
from apus.indexing.progress import SyncProgress
from apus.memory import Memory
from apus.memory.session import MemoryEvent
from apus.memory.sync_queue import SyncFinished, SyncProgressed, SyncStarted

# What a sync is doing before it reads anything: queued, waiting for the writer lock, or
# scanning the notes for what changed.
STARTING = "Starting"


class IndexingWatch:
    """How far this server's sync (or another process's) has built the index, or None."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._lock = threading.Lock()
        self._progress: SyncProgress | None = None
        self._syncing = False  # a sync of this server has started and not finished
        # Whether a finished sync left the index covering the vault: read once, before this
        # server's first sync, then known from its own syncs.
        self._complete = memory.index_complete()
        memory.subscribe(self._hear)

    def current(self) -> Indexing | None:
        with self._lock:
            progress, syncing = self._progress, self._syncing
        if not syncing and not self._queued():
            # Not this server's sync: maybe `apus memory index` (or another server) reads the
            # notes elsewhere; the session leaves out one that only looks for changes.
            return _answer(self._memory.reading(other_than=os.getpid()))
        complete = self._index_complete()
        if progress is None or progress.looking:
            return None if complete else _starting(progress)
        return _answer(progress)

    def building(self) -> bool:
        """Whether this server is building the index now (its keyword part included)."""
        with self._lock:
            syncing = self._syncing
        return (syncing or self._queued()) and not self._index_complete()

    def _queued(self) -> bool:
        syncs = self._memory.syncs
        return syncs is not None and not syncs.idle

    def _index_complete(self) -> bool:
        with self._lock:
            return self._complete

    def _hear(self, event: MemoryEvent) -> None:
        with self._lock:
            if isinstance(event, SyncStarted):
                self._syncing, self._progress = True, None
            elif isinstance(event, SyncProgressed):
                self._progress = event.progress
            elif isinstance(event, SyncFinished):
                self._syncing, self._progress = False, None
                if event.report is not None and not event.report.cancelled:
                    self._complete = True


def _starting(progress: SyncProgress | None) -> Indexing:
    found = 0 if progress is None or progress.phase != "scan" else progress.done
    return Indexing(phase=STARTING, done=found, total=0)


def _answer(progress: SyncProgress | None) -> Indexing | None:
    if progress is None:
        return None
    eta = None if progress.eta_seconds is None else round(progress.eta_seconds, 1)
    return Indexing(phase=progress.label, done=progress.done, total=progress.total, eta=eta)
