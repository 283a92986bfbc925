"""How long to wait after failures in a row: the one backoff every retry in Apus follows.

A call to a hosted service (`apus.embed.retry`), a failed background sync
(`apus.memory.sync_queue`) and a restart of the embedding server
(`apus.embed.local.server_manager`) each name their own first delay and ceiling; the doubling
between them is this one. Each of those waits in a loop of its own (a request, the queue's
thread, the server's next start), so the rule is a value they ask, not a retry loop.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """`first` seconds after the first failure, doubled after each more, never above
    `longest`. With `jitter` each delay is drawn from the last quarter of that range, so
    clients that failed together do not retry together."""

    first: float
    longest: float
    jitter: bool = False

    def delay(self, failures: int) -> float:
        """Seconds to wait after `failures` failures in a row (none counts as one)."""
        # Capped: 2**30 times any first delay is past every ceiling, and a float power of
        # thousands of failures would overflow.
        doublings = min(max(failures, 1) - 1, 30)
        delay = min(self.first * 2.0**doublings, self.longest)
        return delay * random.uniform(0.75, 1.0) if self.jitter else delay
