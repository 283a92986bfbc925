"""The sync queue after another process held the writer lock: a write's own sync, which waits
its turn at the lock, runs at once instead of after the busy retry's delay."""

from __future__ import annotations

import threading
from typing import Any

from apus.errors import IndexBusyError
from apus.indexing.progress import ProgressCallback
from apus.indexing.request import SyncRequest
from apus.memory.sync_queue import SyncEvent, SyncQueue

# Far longer than the test may take: a sync left for the busy retry would never come.
NEVER_S = 3600.0
# Only a guard against a hang; nothing here measures speed.
GUARD_S = 120.0


def test_a_request_that_waits_its_turn_runs_at_once_after_a_busy_sync() -> None:
    runs: list[SyncRequest] = []
    first_running = threading.Event()
    let_first_end = threading.Event()
    second_done = threading.Event()

    def runner(request: SyncRequest, _cancel: threading.Event, _progress: ProgressCallback) -> Any:
        runs.append(request)
        if len(runs) == 1:
            first_running.set()
            let_first_end.wait(GUARD_S)
            raise IndexBusyError("Another Apus process is updating the index.", "wait")
        second_done.set()
        return None

    def ignore(_event: SyncEvent) -> None:
        pass

    queue = SyncQueue(runner, ignore, busy_retry_s=NEVER_S)
    try:
        queue.request()  # a background sync: it gives way when the lock is taken
        assert first_running.wait(GUARD_S)
        queue.request(SyncRequest(wait_s=60))  # a write's, while that one runs
        let_first_end.set()
        assert second_done.wait(GUARD_S), "the write's sync waited for the busy retry"
        assert runs[1].wait_s == 60
        assert queue.wait_idle(GUARD_S)
    finally:
        queue.close()


def test_a_background_request_after_a_busy_sync_still_waits_for_the_retry() -> None:
    runs: list[SyncRequest] = []
    first_running = threading.Event()
    let_first_end = threading.Event()
    busy_reported = threading.Event()

    def runner(request: SyncRequest, _cancel: threading.Event, _progress: ProgressCallback) -> Any:
        runs.append(request)
        first_running.set()
        let_first_end.wait(GUARD_S)
        raise IndexBusyError("Another Apus process is updating the index.", "wait")

    def told(event: SyncEvent) -> None:
        if getattr(event, "busy", False):
            busy_reported.set()

    queue = SyncQueue(runner, told, busy_retry_s=NEVER_S)
    try:
        queue.request()
        assert first_running.wait(GUARD_S)
        queue.request()  # a change on disk: retrying at once would only meet the lock again
        let_first_end.set()
        assert busy_reported.wait(GUARD_S)
        assert not queue.idle and len(runs) == 1  # pending, behind the retry delay
    finally:
        queue.close()
