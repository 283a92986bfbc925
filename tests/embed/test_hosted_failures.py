"""Every hosted provider against its fake, through the same failures: a wrong key, 429 with
Retry-After, 5xx, malformed JSON, vectors of the wrong width; keys never shown, probes once."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from apus.embed.base import (
    EmbeddingAuthError,
    EmbeddingRateLimited,
    EmbeddingRequestError,
    EmbeddingUnavailable,
    probe,
)
from apus.embed.providers import create_embedder, resolve_provider
from support.fake_service import Reply, vector_for

from .hosted import DIMS, HARNESSES, Harness

PROVIDERS = sorted(HARNESSES)
RATE_LIMITED = {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}


@pytest.fixture(params=PROVIDERS)
def harness(request: pytest.FixtureRequest) -> Harness:
    return HARNESSES[request.param]


def unit(text: str) -> np.ndarray:
    raw = np.asarray(vector_for(text, DIMS), dtype=np.float64)
    return raw / np.linalg.norm(raw)


def assert_hidden(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text


def test_documents_and_queries_come_back_normalised_in_order(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    with harness.running(monkeypatch) as fake:
        embedder = create_embedder(harness.settings(fake))
        assert embedder.identity.dims == DIMS  # the configured width: no request needed
        assert fake.matching(harness.marker) == []
        texts = [embedder.document_text(f"note {i} about tomatoes", None) for i in range(3)]
        vectors = embedder.embed(texts, kind="document")
        query = embedder.embed([embedder.query_text("tomatoes")], kind="query")
    assert vectors.dtype == np.float32 and vectors.shape == (3, DIMS)
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, unit(text), rtol=1e-5)
    np.testing.assert_allclose(query[0], unit(embedder.query_text("tomatoes")), rtol=1e-5)


def test_a_wrong_key_is_refused_with_the_fix_and_never_shown(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = harness.secret[:-6] + "WRONG0"
    with harness.running(monkeypatch, key=wrong) as fake:
        embedder = create_embedder(harness.settings(fake))
        with pytest.raises(EmbeddingAuthError) as caught:
            embedder.embed(["garden"], kind="query")
    error = caught.value
    assert "refused the credentials" in error.reason
    assert error.fix and ("AWS" in error.fix or "_API_KEY" in error.fix or "TOKEN" in error.fix)
    described = json.dumps(embedder.describe())
    for secret in (wrong, harness.secret):
        assert_hidden(secret, str(error), error.reason, error.fix, described, caplog.text)


def test_429_waits_as_long_as_retry_after_says_then_succeeds(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    with harness.running(monkeypatch) as fake:
        fake.fail(harness.marker, Reply(429, RATE_LIMITED, {"Retry-After": "1"}))
        embedder = create_embedder(harness.settings(fake))
        vectors = embedder.embed(["garden"], kind="query")
    assert vectors.shape == (1, DIMS)
    assert len(fake.matching(harness.marker)) == 2
    # One wait, exactly as long as the service asked (not the backoff's own delay).
    assert pauses == [1.0]


def test_429_asking_for_more_than_the_budget_fails_at_once(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    with harness.running(monkeypatch) as fake:
        fake.fail(harness.marker, Reply(429, RATE_LIMITED, {"Retry-After": "120"}))
        embedder = create_embedder(harness.settings(fake, timeout_seconds=5))
        with pytest.raises(EmbeddingRateLimited) as caught:
            embedder.embed(["garden"], kind="query")
    assert pauses == []  # no wait at all, neither the 120 s asked for nor a backoff
    assert "HTTP 429" in caught.value.reason and "asked to wait 120s" in caught.value.reason
    assert caught.value.retry_after == 120
    assert "apus memory index" in (caught.value.fix or "")
    assert len(fake.matching(harness.marker)) == 1


def test_server_errors_are_retried_then_reported(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    failure = Reply(500, {"error": {"message": "internal error"}}, {"Retry-After": "0"})
    with harness.running(monkeypatch) as fake:
        fake.fail(harness.marker, failure)
        embedder = create_embedder(harness.settings(fake, max_retries=1))
        assert embedder.embed(["garden"], kind="query").shape == (1, DIMS)
        fake.fail(harness.marker, failure, failure)
        with pytest.raises(EmbeddingRequestError, match=r"HTTP 500 after 2 attempts"):
            embedder.embed(["garden"], kind="query")
    assert len(fake.matching(harness.marker)) == 4


def test_malformed_json_and_wrong_widths_are_clear_errors(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    with harness.running(monkeypatch) as fake:
        embedder = create_embedder(harness.settings(fake))
        fake.fail(harness.marker, Reply(200, '{"data": [{"embedding": [0.1,'))
        with pytest.raises(EmbeddingRequestError, match="not JSON") as caught:
            embedder.embed(["garden"], kind="query")
        assert caught.value.fix and "baseUrl" in caught.value.fix
        fake.fail(harness.marker, Reply(200, harness.answer([[0.5] * 5])))
        with pytest.raises(EmbeddingRequestError, match="5-dimensional vectors") as caught:
            embedder.embed(["garden"], kind="query")
    assert "expected 8" in caught.value.reason
    assert caught.value.fix and "outputDimensionality" in caught.value.fix
    assert embedder.describe()["state"] == "failed"


def test_a_probe_reports_a_rate_limit_without_waiting(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, pauses: list[float]
) -> None:
    with harness.running(monkeypatch) as fake:
        fake.fail(harness.marker, Reply(429, RATE_LIMITED, {"Retry-After": "2"}))
        result = probe(create_embedder(harness.settings(fake)), timeout_s=30)
    assert result.ok is False and result.error is not None
    assert "rate limiting" in result.error
    assert pauses == []  # the 2 s Retry-After was not waited for
    assert len(fake.matching(harness.marker)) == 1


def test_missing_credentials_make_the_provider_unavailable_with_the_fix(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    with harness.fake() as fake:
        settings = harness.settings(fake)
        if harness.provider == "bedrock":
            monkeypatch.setenv("AWS_REGION", "eu-west-1")
        resolution = resolve_provider(settings)
        assert resolution.embedder is not None
        with pytest.raises(EmbeddingUnavailable) as caught:
            resolution.embedder.embed(["garden"], kind="query")
    fix = caught.value.fix or ""
    assert "AWS_ACCESS_KEY_ID" in fix or "export" in fix
    assert fake.requests == []  # nothing was sent without credentials
