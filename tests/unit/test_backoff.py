"""One backoff for every retry: the service calls', the failed syncs' and the embedding
server's restarts' delays, each the doubling of its own first delay up to its own ceiling."""

from __future__ import annotations

from apus.backoff import Backoff
from apus.embed.local.server_manager import RESTART_BACKOFF
from apus.embed.retry import SERVICE_RETRY, RetryPolicy
from apus.memory.sync_queue import SYNC_RETRY


def test_backoff_doubles_up_to_its_longest() -> None:
    backoff = Backoff(first=2.0, longest=30.0)
    assert [backoff.delay(n) for n in range(1, 7)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert backoff.delay(0) == 2.0  # no failure yet counts as the first
    assert backoff.delay(10_000) == 30.0  # no overflow however long it fails


def test_jitter_draws_from_the_last_quarter_of_each_delay() -> None:
    backoff = Backoff(first=1.0, longest=3.0, jitter=True)
    for failures, delay in ((1, 1.0), (2, 2.0), (3, 3.0), (9, 3.0)):
        drawn = [backoff.delay(failures) for _ in range(200)]
        assert all(0.75 * delay <= d <= delay for d in drawn)
        assert len(set(drawn)) > 1


def test_each_retry_keeps_its_delays() -> None:
    # Failed syncs: 2 s doubled up to five minutes.
    assert [SYNC_RETRY.delay(n) for n in (1, 2, 3, 8, 9, 50)] == [2, 4, 8, 256, 300, 300]
    # The embedding server's restarts: 1 s doubled up to 30 s (the count starts at none).
    assert [RESTART_BACKOFF.delay(n) for n in (0, 1, 2, 5, 6, 50)] == [1, 1, 2, 16, 30, 30]
    # Hosted services: about 1 s doubled up to 30 s, unless they said how long to wait.
    policy = RetryPolicy()
    assert policy.backoff == SERVICE_RETRY and SERVICE_RETRY.jitter
    assert 0.75 <= policy.delay(0, None) <= 1.0 and 22.5 <= policy.delay(7, None) <= 30.0
    assert policy.delay(0, 7.0) == 7.0
