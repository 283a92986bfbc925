"""The time budget of one embedding call, and how long to wait before trying a service again."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

from apus.backoff import Backoff

# 429 says "slow down"; 5xx says "our side failed, try again". Other 4xx will not get better.
RETRY_STATUSES = frozenset({429, *range(500, 600)})


@dataclass
class Deadline:
    """A caller's budget in seconds, counted from its creation, for every attempt and wait."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return max(0.0, self.started + self.seconds - time.monotonic())


# A service that failed is asked again after about 1 s, then 2, 4... up to 30 s (jittered:
# clients that failed together do not come back together).
SERVICE_RETRY = Backoff(first=1.0, longest=30.0, jitter=True)


@dataclass(frozen=True)
class RetryPolicy:
    """How often a call to a service is tried again, and after how long: the backoff's
    delay, unless the service said how long to wait."""

    retries: int = 3
    backoff: Backoff = SERVICE_RETRY

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt + 1` (attempt counts from 0)."""
        if retry_after is not None:
            return retry_after
        return self.backoff.delay(attempt + 1)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP date (None if unusable)."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)
