"""Background syncs of one vault, one at a time, on a thread the session owns.

Requests that arrive while a sync runs are folded into one more run (a forced request wins
and cancels the running one: its work would be thrown away). When another process holds the
writer lock, the queue says so and tries again a little later (a write's own sync that came
meanwhile goes at once: it waits its turn at the lock instead). A sync that fails is tried
again with growing delays (`SYNC_RETRY`), so the index recovers by itself once the cause is
gone; a new request (a change on disk) tries at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from apus.backoff import Backoff as Backoff  # the session names it from here
from apus.errors import IndexBusyError
from apus.indexing.progress import ProgressCallback, SyncProgress
from apus.indexing.request import SyncRequest

if TYPE_CHECKING:
    # Only named: a search process never imports the index's writers.
    from apus.indexing.sync import SyncReport

log = logging.getLogger(__name__)

# Another apus process holds the index writer lock: try again after this long.
BUSY_RETRY_S = 5.0


# A failed sync is tried again after 2 s, doubled after each failure up to five minutes: a
# cause that clears by itself (a full disk, a folder mounted late) is met soon, one that does
# not costs one attempt every five minutes.
SYNC_RETRY = Backoff(first=2.0, longest=300.0)


@dataclass(frozen=True)
class SyncStarted:
    request: SyncRequest


@dataclass(frozen=True)
class SyncProgressed:
    progress: SyncProgress


@dataclass(frozen=True)
class SyncFinished:
    request: SyncRequest
    report: SyncReport | None  # None when the sync raised
    error: BaseException | None = None

    @property
    def busy(self) -> bool:
        """Another process was writing the index; this queue retries by itself."""
        return isinstance(self.error, IndexBusyError)

    @property
    def failed(self) -> bool:
        """The sync raised (not for a busy lock): the queue retries it after a delay."""
        return self.error is not None and not self.busy


SyncEvent = SyncStarted | SyncProgressed | SyncFinished
SyncRunner = Callable[[SyncRequest, threading.Event, ProgressCallback], "SyncReport"]


class SyncQueue:
    """Runs `runner` for each (folded) request on one daemon thread; reports through `emit`."""

    def __init__(
        self,
        runner: SyncRunner,
        emit: Callable[[SyncEvent], None],
        *,
        busy_retry_s: float = BUSY_RETRY_S,
        backoff: Backoff | None = None,
    ) -> None:
        self._runner = runner
        self._emit = emit
        self._busy_retry_s = busy_retry_s
        self._backoff = backoff or SYNC_RETRY
        self._failures = 0  # failed syncs in a row
        self._failure_retry = False  # what is pending is only the retry of a failed sync
        self._cond = threading.Condition()
        self._pending: SyncRequest | None = None
        self._retry_at: float | None = None
        self._running: SyncRequest | None = None
        self._cancel = threading.Event()
        self._closed = False
        # Syncs numbered as they start; the last one that ended (other than on a busy lock,
        # which is tried again) and the last that succeeded: what `wait_for` waits on.
        self._started = 0
        self._ended = 0
        self._succeeded = 0
        self._thread = threading.Thread(target=self._loop, name="apus-sync-queue", daemon=True)
        self._thread.start()

    def request(self, request: SyncRequest | None = None) -> int:
        """Queue `request`; returns the number of the sync that will do it (the next to
        start takes everything pending), for `wait_for`."""
        request = request or SyncRequest()
        with self._cond:
            ticket = self._started + 1
            if self._closed:
                return ticket
            self._pending = request.merged(self._pending)
            self._retry_at = None
            self._failure_retry = False
            if request.force and self._running is not None:
                self._cancel.set()
            self._cond.notify_all()
            return ticket

    @property
    def idle(self) -> bool:
        """Nothing running, nothing queued (a busy-retry counts as queued; the retry of a
        failed sync, which may wait minutes, does not)."""
        with self._cond:
            return self._quiet()

    def _quiet(self) -> bool:
        return self._running is None and (self._pending is None or self._failure_retry)

    @property
    def failures(self) -> int:
        """Failed syncs in a row (0 once one succeeds)."""
        with self._cond:
            return self._failures

    @property
    def running(self) -> bool:
        with self._cond:
            return self._running is not None

    @property
    def stopped(self) -> bool:
        """Closed, and its thread has ended."""
        return self._closed and not self._thread.is_alive()

    def wait_idle(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._quiet():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def wait_for(self, ticket: int, timeout: float | None = None) -> bool:
        """Wait until the sync numbered `ticket` (or a later one) has ended; whether it
        succeeded. Unlike `wait_idle`, syncs asked for afterwards (other writers, changes on
        disk) are not waited for."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._ended < ticket and not self._closed:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return self._succeeded >= ticket

    def close(self, timeout: float = 30.0) -> None:
        """Cancel the running sync (it keeps what it committed) and stop the thread."""
        with self._cond:
            self._closed = True
            self._pending = None
            self._cancel.set()
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _next(self) -> SyncRequest | None:
        """Wait for the next request to run (None: closed)."""
        with self._cond:
            while not self._closed:
                wait = None
                if self._pending is not None:
                    wait = 0.0 if self._retry_at is None else self._retry_at - time.monotonic()
                    if wait <= 0:
                        request, self._pending, self._retry_at = self._pending, None, None
                        self._failure_retry = False
                        self._running = request
                        self._started += 1
                        self._cancel = threading.Event()
                        return request
                self._cond.wait(wait)
            return None

    def _loop(self) -> None:
        while (request := self._next()) is not None:
            self._tell(SyncStarted(request))
            cancel = self._cancel
            try:
                report = self._runner(request, cancel, lambda p: self._tell(SyncProgressed(p)))
                finished = SyncFinished(request, report)
            except Exception as exc:  # reported to the listener; the queue keeps serving
                finished = SyncFinished(request, None, exc)
            # Reported before the queue counts as idle, so whoever waits for idle sees it.
            self._tell(finished)
            with self._cond:
                self._running = None
                # A busy lock is tried again, and a cancelled sync gave way to a forced one
                # that does its work too: neither ended what was asked of it.
                cancelled = finished.report is not None and finished.report.cancelled
                if not finished.busy and not cancelled:
                    self._ended = self._started
                    if not finished.failed:
                        self._succeeded = self._started
                self._failures = self._failures + 1 if finished.failed else 0
                retry = None
                if finished.busy:
                    retry = self._busy_retry_s
                elif finished.failed:
                    retry = self._backoff.delay(self._failures)
                if retry is not None and not self._closed:
                    # After a failure, a request that came in meanwhile (a change on disk,
                    # maybe the fix) runs at once; after a busy lock, one that waits its turn
                    # at it does (a write's own sync), rather than after the retry delay.
                    pending = self._pending
                    waiting = pending is not None and (finished.failed or pending.wait_s > 0)
                    self._pending = request.merged(pending)
                    self._retry_at = None if waiting else time.monotonic() + retry
                    self._failure_retry = finished.failed and not waiting
                self._cond.notify_all()

    def _tell(self, event: SyncEvent) -> None:
        try:
            self._emit(event)
        except Exception:  # a listener's bug must not stop the index from being kept fresh
            log.exception("sync listener failed on %s", type(event).__name__)
