"""How far a running sync has read the notes, for every process that searches meanwhile.

A search made while a sync still reads the vault (a first index above all) covers only the
notes read so far; without saying so, an empty or short answer reads as "memory has nothing
on this". The app and `apus mcp` hear their own sync's progress events; a one-shot command
(`apus memory search` while `apus memory index` or a server runs elsewhere) cannot, so the
sync also leaves its latest reading progress in a small file in the index folder, with its
pid, and removes it when the notes are read. A file whose process is gone tells nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import cast

from apus.embed.local.procs import pid_alive
from apus.indexing.progress import Phase, SyncProgress

FILE_NAME = "reading.json"
# The phases in which notes are still being read into the index (embedding comes after:
# keyword search already covers every note read by then).
READING_PHASES = frozenset({"scan", "index", "large", "sessions", "keyword"})


class ReadingProgressFile:
    """The writer's side: publish each reading event, then clear. Events are already
    sparse (every 50 notes, every 1,000 chunks of a huge note), so each one is written."""

    def __init__(self, index_dir: Path) -> None:
        self._path = index_dir / FILE_NAME
        self._published = False

    def publish(self, event: SyncProgress) -> None:
        if event.phase not in READING_PHASES:
            self.clear()
            return
        self._published = True
        data = {
            "pid": os.getpid(),
            "phase": event.phase,
            "done": event.done,
            "total": event.total,
            "eta": event.eta_seconds,
        }
        staged = self._path.with_name(f"{FILE_NAME}.{os.getpid()}.tmp")
        # Only a hint for readers: a full disk must not stop the sync here.
        with contextlib.suppress(OSError):
            staged.write_text(json.dumps(data), encoding="utf-8")
            staged.replace(self._path)  # whole or not at all: a reader may read it now

    def clear(self) -> None:
        if self._published:
            self._published = False
            with contextlib.suppress(OSError):
                self._path.unlink(missing_ok=True)


def reading_progress(index_dir: Path, *, other_than: int | None = None) -> SyncProgress | None:
    """The progress of a sync that is reading notes into this index now, or None (also for
    the sync of process `other_than`, which tells its own progress)."""
    try:
        data = json.loads((index_dir / FILE_NAME).read_text(encoding="utf-8"))
        pid, phase = int(data["pid"]), str(data["phase"])
        done, total = int(data["done"]), int(data["total"])
        eta = None if data.get("eta") is None else float(data["eta"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if phase not in READING_PHASES or pid == other_than or not pid_alive(pid):
        return None  # left behind by a sync that was killed, or not another's
    return SyncProgress(cast(Phase, phase), done, total, eta)
