"""One writer per index: an advisory lock file, with a clear message for the second writer."""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

import filelock

from apus.embed.local.procs import pid_alive
from apus.errors import IndexBusyError


def writer_elsewhere(index_dir: Path) -> int | None:
    """The pid of another live process holding the writer lock, read from its pid file
    without touching the lock (a reader must never make a writer's acquire fail)."""
    pid = _read_pid(index_dir / _PID_FILE)
    return pid if pid is not None and pid != os.getpid() and pid_alive(pid) else None


_PID_FILE = "writer.pid"


def _read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


class WriterLock:
    """Held while a process changes an index. Readers never take it."""

    def __init__(self, index_dir: Path, vault: Path) -> None:
        index_dir.mkdir(parents=True, exist_ok=True)
        self._lock = filelock.FileLock(str(index_dir / "writer.lock"), timeout=0)
        self._pid_file = index_dir / _PID_FILE
        self._vault = vault

    def __enter__(self) -> WriterLock:
        try:
            self._lock.acquire()
        except filelock.Timeout:
            holder = self._holder()
            who = f"pid {holder}" if holder else "another process"
            raise IndexBusyError(
                f"Another Apus process ({who}) is updating the index of {self._vault}.",
                fix="wait for it to finish (search keeps working meanwhile), or stop that process",
            ) from None
        try:
            self._pid_file.write_text(str(os.getpid()), encoding="utf-8")
        except OSError:
            # Only the busy message and status read it; a full disk must not stop the writer
            # here, but reach the step that says what is wrong.
            self._pid_file.unlink(missing_ok=True)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._pid_file.unlink(missing_ok=True)
        self._lock.release()

    def is_held_elsewhere(self) -> bool:
        try:
            self._lock.acquire()
        except filelock.Timeout:
            return True
        self._lock.release()
        return False

    def _holder(self) -> int | None:
        return _read_pid(self._pid_file)
