"""The shared transport: redirects, deadlines, dropped connections, backoff, Retry-After."""

from __future__ import annotations

import socket
import time
from email.utils import formatdate

import pytest

from apus.backoff import Backoff
from apus.embed.base import EmbeddingConnectionError, EmbeddingRequestError, EmbeddingTimeout
from apus.embed.providers import create_embedder
from apus.embed.retry import Deadline, RetryPolicy, parse_retry_after
from support.fake_service import FakeService, Recorded, Reply
from support.ports import refusing_port

from .hosted import HARNESSES, KEYS

HARNESS = HARNESSES["openai"]


class Redirector(FakeService):
    def __init__(self, status: int, target: str) -> None:
        super().__init__()
        self.status, self.target = status, target

    def answer(self, request: Recorded) -> Reply:
        return Reply(self.status, {}, {"Location": self.target})


def test_a_redirect_to_another_host_is_not_followed_and_the_key_stays_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with HARNESS.running(monkeypatch) as elsewhere, Redirector(307, "") as redirector:
        redirector.target = elsewhere.url + "/v1/embeddings"
        settings = HARNESS.settings(elsewhere, base_url=redirector.url + "/v1")
        with pytest.raises(EmbeddingRequestError, match="does not follow it") as caught:
            create_embedder(settings).embed(["a"], kind="query")
    assert elsewhere.requests == []
    assert caught.value.fix and "baseUrl" in caught.value.fix


def test_a_same_origin_307_is_followed_with_the_body(monkeypatch: pytest.MonkeyPatch) -> None:
    with HARNESS.running(monkeypatch) as fake:
        fake.fail("/old/", Reply(307, {}, {"Location": "/v1/embeddings"}))
        settings = HARNESS.settings(fake, base_url=fake.url + "/old/v1")
        create_embedder(settings).embed(["a"], kind="query")
    old, new = fake.requests
    assert (old.path, new.path) == ("/old/v1/embeddings", "/v1/embeddings")
    assert new.body == old.body
    assert new.headers["authorization"] == f"Bearer {KEYS['openai']}"


def test_the_budget_covers_every_attempt(
    monkeypatch: pytest.MonkeyPatch, pauses: list[float], sent_timeouts: list[dict[str, float]]
) -> None:
    # A retry gets only what the first attempt and the wait left of the one budget.
    with HARNESS.running(monkeypatch) as fake:
        failure = Reply(500, {"error": {"message": "internal error"}}, {"Retry-After": "0.4"})
        fake.fail("/embeddings", failure)
        create_embedder(HARNESS.settings(fake, timeout_seconds=1)).embed(["a"], kind="query")
    assert pauses == [0.4]
    first, second = (sent["read"] for sent in sent_timeouts)
    assert first <= 1 and second <= 1 - 0.4
    assert all(sent["connect"] <= sent["read"] for sent in sent_timeouts)

    sent_timeouts.clear()
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        monkeypatch.setenv("OPENAI_API_KEY", KEYS["openai"])
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        settings = HARNESS.settings(base_url=url, timeout_seconds=1)
        with pytest.raises(EmbeddingTimeout, match="did not answer within 1s"):
            create_embedder(settings).embed(["a"], kind="query")
    # One attempt, allowed at most the budget; a timeout leaves nothing to retry with.
    assert len(sent_timeouts) == 1 and sent_timeouts[0]["read"] <= 1
    assert pauses == [0.4]


def test_a_refused_connection_fails_at_once_with_the_address(
    pauses: list[float], sent_timeouts: list[dict[str, float]]
) -> None:
    with refusing_port() as port:
        settings = HARNESS.settings(base_url=f"http://127.0.0.1:{port}", api_key="sk-x" * 5)
        with pytest.raises(EmbeddingConnectionError, match=f"cannot connect.*127.0.0.1:{port}"):
            create_embedder(settings).embed(["a"], kind="query")
    # At once: one attempt, no wait before giving up (a refusal is not worth a retry).
    assert len(sent_timeouts) == 1 and pauses == []


def test_a_dropped_connection_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    with HARNESS.running(monkeypatch) as fake:
        fake.fail("/embeddings", Reply(0))
        embedder = create_embedder(HARNESS.settings(fake, max_retries=1))
        assert embedder.embed(["a"], kind="query").shape == (1, 8)
        fake.fail("/embeddings", Reply(0), Reply(0))
        with pytest.raises(EmbeddingConnectionError, match="closed the connection mid-request"):
            embedder.embed(["a"], kind="query")
    assert len(fake.requests) == 4


def test_backoff_grows_and_retry_after_dates_are_understood() -> None:
    policy = RetryPolicy(retries=3, backoff=Backoff(first=1.0, longest=3.0, jitter=True))
    assert 0.75 <= policy.delay(0, None) <= 1.0
    assert 1.5 <= policy.delay(1, None) <= 2.0
    assert 2.25 <= policy.delay(5, None) <= 3.0
    assert policy.delay(0, 7.0) == 7.0
    now = time.time()
    assert parse_retry_after("12") == 12
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30, 1)
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    assert Deadline(0.2, started=time.monotonic() - 0.25).remaining() == 0
    assert 0 < Deadline(60).remaining() <= 60
