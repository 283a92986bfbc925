"""OpenAI, Voyage, Mistral and DeepInfra: the exact requests each API gets, and where keys
come from (a configured key wins; the environment fills an empty one)."""

from __future__ import annotations

from typing import Any

import pytest

from apus.config import RemoteSettings, SearchSettings
from apus.embed.providers import create_embedder

from .hosted import DIMS, HARNESSES, KEYS


def requests_to(fake: Any) -> list[Any]:
    return fake.matching("/embeddings")


@pytest.mark.parametrize(
    ("provider", "path", "model", "extra"),
    [
        ("openai", "/v1/embeddings", "text-embedding-3-small", {"dimensions": DIMS}),
        ("mistral", "/v1/embeddings", "mistral-embed", {"output_dimension": DIMS}),
        ("deepinfra", "/v1/openai/embeddings", "BAAI/bge-m3", {"dimensions": DIMS}),
    ],
)
def test_exact_request_without_labels(
    provider: str, path: str, model: str, extra: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = HARNESSES[provider]
    with harness.running(monkeypatch) as fake:
        embedder = create_embedder(harness.settings(fake))
        texts = [embedder.document_text("Buy coffee.", "Errands"), "second"]
        embedder.embed(texts, kind="document")
        embedder.embed([embedder.query_text("coffee")], kind="query")
    document, query = requests_to(fake)
    assert (document.method, document.path) == ("POST", path)
    assert document.headers["authorization"] == f"Bearer {KEYS[provider]}"
    assert document.headers["content-type"] == "application/json"
    assert document.headers["user-agent"].startswith("apus/")
    assert document.body == {"input": texts, "model": model, **extra}
    assert query.body == {"input": ["coffee"], "model": model, **extra}
    assert embedder.describe()["key"] == harness.env(fake, "x").popitem()[0]


def test_voyage_always_sends_its_input_types(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = HARNESSES["voyage"]
    with harness.running(monkeypatch) as fake:
        embedder = create_embedder(harness.settings(fake))
        embedder.embed(["a note"], kind="document")
        embedder.embed(["a question"], kind="query")
    document, query = requests_to(fake)
    assert document.body == {
        "input": ["a note"],
        "model": "voyage-4-large",
        "input_type": "document",
        "output_dimension": DIMS,
    }
    assert query.body["input_type"] == "query"


def test_openai_sends_input_types_only_when_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = HARNESSES["openai"]
    with harness.running(monkeypatch) as fake:
        settings = harness.settings(fake).model_copy(
            update={"query_input_type": "query", "document_input_type": "passage"}
        )
        embedder = create_embedder(settings)
        embedder.embed(["a note"], kind="document")
        embedder.embed(["a question"], kind="query")
    document, query = requests_to(fake)
    assert (document.body["input_type"], query.body["input_type"]) == ("passage", "query")


def test_batches_follow_the_batch_size_and_the_token_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    harness = HARNESSES["openai"]
    with harness.running(monkeypatch) as fake:
        embedder = create_embedder(harness.settings(fake, batch_size=2))
        texts = [f"text number {i}" for i in range(5)]
        embedder.embed(texts, kind="document")
    assert [len(r.body["input"]) for r in requests_to(fake)] == [2, 2, 1]
    assert [t for r in requests_to(fake) for t in r.body["input"]] == texts

    # mistral-embed reads 16k tokens per request: three ~6.7k-token texts take two requests.
    harness = HARNESSES["mistral"]
    with harness.running(monkeypatch) as fake:
        embedder = create_embedder(harness.settings(fake))
        embedder.embed(["word " * 4000] * 3, kind="document")
    assert [len(r.body["input"]) for r in requests_to(fake)] == [2, 1]


def test_a_configured_key_wins_and_the_environment_fills_an_empty_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    harness = HARNESSES["openai"]
    with harness.running(monkeypatch, key="sk-from-the-environment-000000") as fake:
        fake.api_key = "sk-from-the-config-file-0000000"
        settings = SearchSettings(
            provider="openai",
            output_dimensionality=DIMS,
            remote=RemoteSettings(base_url=fake.url + "/v1", api_key=fake.api_key),
        )
        create_embedder(settings).embed(["a"], kind="query")
        fake.api_key = "sk-from-the-environment-000000"
        no_key = settings.model_copy(update={"remote": RemoteSettings(base_url=fake.url + "/v1")})
        embedder = create_embedder(no_key)
        embedder.embed(["a"], kind="query")
    bearers = [r.headers["authorization"] for r in requests_to(fake)]
    assert bearers == [
        "Bearer sk-from-the-config-file-0000000",
        "Bearer sk-from-the-environment-000000",
    ]
    assert embedder.describe()["key"] == "OPENAI_API_KEY"
