"""Whether the notes are still being read while the agent asks: the sync this server runs,
as its progress events tell it.

An answer given while a sync reads the vault (a first index above all) may miss notes that
are not read yet; without saying so, an agent takes an empty answer for "memory has nothing
on this". Embedding is not counted here: `memory_status` reports it, and keyword search
already covers every note read.
"""

from __future__ import annotations

import threading

from apus.agents.answers import Indexing
from apus.indexing.progress import SyncProgress
from apus.indexing.reading_progress import READING_PHASES
from apus.memory import Memory
from apus.memory.session import MemoryEvent
from apus.memory.sync_queue import SyncFinished, SyncProgressed


class IndexingWatch:
    """The latest progress of a sync that is still reading notes, or None."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._lock = threading.Lock()
        self._progress: SyncProgress | None = None
        memory.subscribe(self._hear)

    def current(self) -> Indexing | None:
        with self._lock:
            progress = self._progress
        if progress is None:
            # Not this server's sync: maybe `apus memory index` reads the notes elsewhere.
            progress = self._memory.reading()
        if progress is None:
            return None
        eta = None if progress.eta_seconds is None else round(progress.eta_seconds, 1)
        return Indexing(phase=progress.label, done=progress.done, total=progress.total, eta=eta)

    def _hear(self, event: MemoryEvent) -> None:
        with self._lock:
            if isinstance(event, SyncProgressed):
                reading = event.progress.phase in READING_PHASES
                self._progress = event.progress if reading else None
            elif isinstance(event, SyncFinished):
                self._progress = None
