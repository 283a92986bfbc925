"""GitHub Copilot: the token exchange, the model list check, embeddings with the Copilot
token; renewal before expiry and after a refusal; each token only where it belongs."""

from __future__ import annotations

import time
from typing import Any

import pytest

from apus.embed import copilot
from apus.embed.base import EmbeddingUnavailable
from apus.embed.copilot import _trusted_api
from apus.embed.providers import create_embedder
from support.fake_apis import CopilotFake
from support.fake_service import Reply

from .hosted import DIMS, HARNESSES, KEYS

HARNESS = HARNESSES["github-copilot"]
GITHUB_TOKEN = KEYS["github-copilot"]
TOKEN_PATH = "/copilot_internal/v2/token"


def test_exchange_then_model_list_then_embeddings(monkeypatch: pytest.MonkeyPatch) -> None:
    with HARNESS.running(monkeypatch) as fake:
        embedder = create_embedder(HARNESS.settings(fake))
        embedder.embed(["first note", "second note"], kind="document")
        embedder.embed(["a question"], kind="query")
    exchange, models, first, second = fake.requests
    assert (exchange.method, exchange.path) == ("GET", TOKEN_PATH)
    assert exchange.headers["authorization"] == f"token {GITHUB_TOKEN}"
    copilot_token = fake.issued[0]
    assert (models.method, models.path) == ("GET", "/models")
    for request in (models, first, second):
        assert request.headers["authorization"] == f"Bearer {copilot_token}"
        assert request.headers["copilot-integration-id"]
        assert request.headers["editor-version"].startswith("apus/")
    assert (first.method, first.path) == ("POST", "/embeddings")
    assert first.body == {
        "input": ["first note", "second note"],
        "model": "text-embedding-3-small",
        "dimensions": DIMS,
    }
    assert second.body["input"] == ["a question"]
    # The GitHub token goes to the exchange only; the Copilot token never goes there.
    for request in fake.requests:
        headers = " ".join(request.headers.values())
        assert (GITHUB_TOKEN in headers) == (request.path == TOKEN_PATH)
        assert copilot_token not in headers or request.path != TOKEN_PATH


def test_a_model_the_account_is_not_offered_is_refused_with_the_choices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with HARNESS.running(monkeypatch) as fake:
        settings = HARNESS.settings(fake).model_copy(update={"model": "text-embedding-3-large"})
        embedder = create_embedder(settings)
        with pytest.raises(EmbeddingUnavailable) as caught:
            embedder.embed(["a"], kind="query")
    assert "does not offer the embedding model text-embedding-3-large" in caught.value.reason
    assert caught.value.fix == (
        "set memory.search.model to one of: text-embedding-3-small, text-embedding-ada-002"
    )
    assert "/embeddings" not in fake.paths()


def test_batches_shrink_to_the_models_max_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    with HARNESS.running(monkeypatch) as fake:
        settings = HARNESS.settings(fake, batch_size=300).model_copy(
            update={"model": "text-embedding-ada-002"}
        )
        create_embedder(settings).embed([f"note {i}" for i in range(300)], kind="document")
    assert [len(r.body["input"]) for r in fake.matching("/embeddings")] == [256, 44]


class _MovedClock:
    """The copilot module's wall clock, `ahead` seconds ahead of the real one (the rest of
    `time` as it is): the token's life passes when the test says, not with the load."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def time(self) -> float:
        return time.time() + self.ahead

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def test_tokens_are_renewed_before_they_expire_and_after_a_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _MovedClock()
    monkeypatch.setattr(copilot, "time", clock)
    fake = CopilotFake(github_token=GITHUB_TOKEN, ttl=1500)  # renewed 120 s before it expires
    with fake:
        for name, value in HARNESS.env(fake, GITHUB_TOKEN).items():
            monkeypatch.setenv(name, value)
        embedder = create_embedder(HARNESS.settings(fake))
        embedder.embed(["a"], kind="query")
        assert len(fake.matching(TOKEN_PATH)) == 1
        clock.ahead = 1500 - 120 - 60  # a minute before it is due for renewal
        embedder.embed(["b"], kind="query")
        assert len(fake.matching(TOKEN_PATH)) == 1
        clock.ahead = 1500 - 120 + 5  # under two minutes of life left
        embedder.embed(["b"], kind="query")  # the first token was about to expire
        assert len(fake.matching(TOKEN_PATH)) == 2
        embedder.embed(["b"], kind="query")  # this one is still good
        assert len(fake.matching(TOKEN_PATH)) == 2
        fake.fail("/embeddings", Reply(401, {"error": {"message": "token revoked"}}))
        embedder.embed(["c"], kind="query")
    assert len(fake.matching(TOKEN_PATH)) == 3
    last = fake.matching("/embeddings")[-1]
    assert last.headers["authorization"] == f"Bearer {fake.issued[-1]}"


def test_only_copilot_hosts_named_by_the_exchange_are_trusted() -> None:
    assert _trusted_api("https://api.individual.githubcopilot.com/") == (
        "https://api.individual.githubcopilot.com"
    )
    assert _trusted_api("https://api.githubcopilot.com.evil.example") == ""
    assert _trusted_api("http://api.githubcopilot.com") == ""
    assert _trusted_api(None) == ""
