"""A test hook: a sync that stops at a named point of its work until a test lets it go.

Tests that kill a sync, search during one or watch its progress must know where the sync is,
on a loaded machine or a fast one; timing a kill or counting on a slow batch cannot. With
`APUS_TEST_HOLD=<folder>` set, every point a sync passes (`start` once it holds the writer
lock, each progress event, `end` before it lets the lock go) is numbered from 1 in this
process and appended to `<folder>/events` as one JSON line (with the time and the pid).
With `APUS_TEST_HOLD_AT` set too (`<number>` or `<phase>:<done>`), the sync stops at the
first point that matches and at every point after it: it writes the point to
`<folder>/held` and waits until `<folder>/go` holds a number at least the point's own.
Unset (always, for a user), a point costs one lookup.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from apus.indexing.progress import SyncProgress

FOLDER_ENV = "APUS_TEST_HOLD"
AT_ENV = "APUS_TEST_HOLD_AT"
_POLL_S = 0.005


@dataclass
class _Points:
    passed: int = 0
    holding: bool = False


_lock = threading.Lock()
_points: dict[str, _Points] = {}  # by folder: each test's own count


def hold_point(phase: str, done: int = 0, total: int = 0) -> None:
    """Record a point of the sync's work; stop there if a test asked to (see the module)."""
    folder = os.environ.get(FOLDER_ENV)
    if not folder:
        return
    at = os.environ.get(AT_ENV, "")
    with _lock:
        points = _points.setdefault(folder, _Points())
        points.passed += 1
        number = points.passed
        points.holding = points.holding or at in (str(number), f"{phase}:{done}")
        holding = points.holding
    line = {
        "n": number,
        "phase": phase,
        "done": done,
        "total": total,
        "t": time.monotonic(),
        "pid": os.getpid(),
    }
    path = Path(folder)
    with (path / "events").open("a", encoding="utf-8") as events:
        events.write(json.dumps(line) + "\n")
    if not holding:
        return
    held = path / "held"
    staged = path / f"held.{os.getpid()}.{threading.get_ident()}"
    staged.write_text(json.dumps(line), encoding="utf-8")
    staged.replace(held)  # whole or not at all: the test reads it while it is written
    while _released(path / "go") < number:
        time.sleep(_POLL_S)


def hold_progress(event: SyncProgress) -> None:
    """`hold_point` for a progress event."""
    hold_point(event.phase, event.done, event.total)


def _released(go: Path) -> int:
    try:
        return int(go.read_text(encoding="utf-8").strip() or 0)
    except (OSError, ValueError):
        return 0
