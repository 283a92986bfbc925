"""One writer per index: a fair lock (`apus.fair_lock`), with a clear message for a writer
that finds it taken and does not wait."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import TracebackType

import filelock

from apus.embed.local.procs import pid_alive
from apus.errors import IndexBusyError
from apus.fair_lock import FairLock, LockTimeout
from apus.index.sqlite import IndexWriteError


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
    """Held while a process changes an index. Readers never take it. Writers that wait
    (`wait_s`) are served in the order they came; one that does not wait gets
    IndexBusyError while anyone holds or waits for it."""

    def __init__(self, index_dir: Path, vault: Path, *, wait_s: float = 0.0) -> None:
        index_dir.mkdir(parents=True, exist_ok=True)
        self._index_dir = index_dir
        self._wait_s = wait_s
        self._lock = self._fair_lock(wait_s)
        # The flock Apus took before the fair lock: held too, so a server of an older version
        # still running after an upgrade never writes the index at the same time.
        self._legacy = filelock.FileLock(str(index_dir / "writer.lock"), timeout=0)
        self._pid_file = index_dir / _PID_FILE
        self._vault = vault

    def _fair_lock(self, wait_s: float) -> FairLock:
        return FairLock(self._index_dir / "writer.queue", timeout=wait_s)

    def __enter__(self) -> WriterLock:
        try:
            self._lock.acquire()
        except OSError as exc:  # the queue's folder cannot be written: a full or read-only disk
            why = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
            raise IndexWriteError(
                f"The writer lock in {self._index_dir} cannot be taken ({why})",
                fix=f"free some space on the disk holding {self._index_dir}, or make it "
                "writable, then run the same command again",
            ) from exc
        except LockTimeout:
            raise self._busy() from None
        try:
            self._legacy.acquire()
        except filelock.Timeout:
            self._lock.release()
            raise self._busy() from None
        try:
            self._pid_file.write_text(str(os.getpid()), encoding="utf-8")
        except OSError:
            # Only the busy message and status read it; a full disk must not stop the writer
            # here, but reach the step that says what is wrong.
            self._pid_file.unlink(missing_ok=True)
        return self

    def _busy(self) -> IndexBusyError:
        holder = self._holder()
        who = f"pid {holder}" if holder else "another process"
        waited = f" (waited {self._wait_s:.0f} s)" if self._wait_s else ""
        return IndexBusyError(
            f"Another Apus process ({who}) is updating the index of {self._vault}{waited}.",
            fix="wait for it to finish (search keeps working meanwhile), or stop that process",
        )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._pid_file.unlink(missing_ok=True)
        self._legacy.release()
        self._lock.release()

    def is_held_elsewhere(self) -> bool:
        probe = self._fair_lock(0)
        try:
            probe.acquire()
        except LockTimeout:
            return True
        probe.release()
        return False

    def _holder(self) -> int | None:
        return _read_pid(self._pid_file)
