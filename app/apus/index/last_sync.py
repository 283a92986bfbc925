"""How the last sync of an index ended: ok, or the failure (when, what, fix) that stands.

A background sync that fails must be state, not a log line, and so must a crash of the
embedding server that a sync went on after: the session records each outcome here
(`last-sync.json` in the index folder, written whole or not at all), so every face of every
process — `memory status`, MCP `memory_status`, the app's status bar and status screen,
`apus doctor` — shows a failure until a sync succeeds again, and recovered crashes until a
sync runs without one."""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from apus.errors import ApusError

_FILE = "last-sync.json"


@dataclass(frozen=True)
class RecoveredCrashes:
    """Crashes of the embedding server during a sync that went on after a restart: a build
    that died once is likely to die again, so the sync's outcome keeps them in sight."""

    count: int
    last: str  # how the last one ended: "SIGILL (illegal instruction)"
    at: float  # when, in seconds since the epoch
    fix: str

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "last": self.last, "at": _iso(self.at), "fix": self.fix}

    def sentence(self) -> str:
        """One line for status and doctor."""
        times = "once" if self.count == 1 else f"{self.count} times"
        return (
            f"the embedding server crashed {times} during the last sync (last: {self.last}, "
            f"at {_iso(self.at)}) and was restarted; it may crash again"
        )


_GENERIC_FIX = "run `apus memory index` to see the full error; the last good index still serves"


@dataclass(frozen=True)
class LastSync:
    ok: bool
    at: float  # seconds since the epoch
    error: str | None = None
    fix: str | None = None
    failures: int = 0  # failed syncs in a row (the live queue retries with backoff)
    recovered: RecoveredCrashes | None = None  # crashes the sync went on after

    @classmethod
    def succeeded(
        cls, at: float | None = None, recovered: RecoveredCrashes | None = None
    ) -> LastSync:
        return cls(True, time.time() if at is None else at, recovered=recovered)

    @classmethod
    def failed(
        cls, exc: BaseException, previous: LastSync | None, at: float | None = None
    ) -> LastSync:
        if isinstance(exc, ApusError):
            error, fix = exc.reason, exc.fix or _GENERIC_FIX
        else:
            error, fix = f"{type(exc).__name__}: {exc}", _GENERIC_FIX
        failures = previous.failures + 1 if previous is not None and not previous.ok else 1
        return cls(False, time.time() if at is None else at, error, fix, failures)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "at": _iso(self.at),
            "error": self.error,
            "fix": self.fix,
            "failures": self.failures,
            "recoveredCrashes": None if self.recovered is None else self.recovered.as_dict(),
        }


def read_last_sync(index_dir: Path) -> LastSync | None:
    """The recorded outcome, or None when none was recorded (or the file is unreadable)."""
    try:
        data = json.loads((index_dir / _FILE).read_text(encoding="utf-8"))
        return LastSync(
            ok=bool(data["ok"]),
            at=float(data["at"]),
            error=None if data.get("error") is None else str(data["error"]),
            fix=None if data.get("fix") is None else str(data["fix"]),
            failures=int(data.get("failures", 0)),
            recovered=_recovered(data.get("recovered")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _recovered(data: Any) -> RecoveredCrashes | None:
    if not isinstance(data, dict):
        return None
    return RecoveredCrashes(
        int(data["count"]), str(data["last"]), float(data["at"]), str(data.get("fix", ""))
    )


def write_last_sync(index_dir: Path, outcome: LastSync) -> None:
    """Record `outcome`; a folder that cannot be written leaves the session's own copy."""
    data = {
        "ok": outcome.ok,
        "at": outcome.at,
        "error": outcome.error,
        "fix": outcome.fix,
        "failures": outcome.failures,
        "recovered": None if outcome.recovered is None else asdict(outcome.recovered),
    }
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=index_dir, prefix=".last-sync.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, index_dir / _FILE)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def _iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, tz=dt.UTC).astimezone().isoformat(timespec="seconds")


def newer(first: LastSync | None, second: LastSync | None) -> LastSync | None:
    """The later of two outcomes (this process's and the one on disk, maybe another's)."""
    if first is None or second is None:
        return first or second
    return first if first.at >= second.at else second
