"""Gemini: batchEmbedContents with the key in a header, task types or (gemini-embedding-2)
written task prefixes, at most 100 texts per call; GOOGLE_API_KEY as the second source."""

from __future__ import annotations

import pytest

from apus.embed.providers import create_embedder

from .hosted import DIMS, HARNESSES, KEYS

HARNESS = HARNESSES["gemini"]
BATCH_PATH = "/v1beta/models/gemini-embedding-001:batchEmbedContents"


def test_exact_batch_request_with_task_types(monkeypatch: pytest.MonkeyPatch) -> None:
    with HARNESS.running(monkeypatch) as fake:
        embedder = create_embedder(HARNESS.settings(fake))
        embedder.embed(["first note", "second note"], kind="document")
        embedder.embed(["a question"], kind="query")
    document, query = fake.requests
    assert (document.method, document.path) == ("POST", BATCH_PATH)
    assert document.headers["x-goog-api-key"] == KEYS["gemini"]
    assert "authorization" not in document.headers
    assert "key=" not in document.path  # a key in the URL ends up in proxy logs
    assert document.body == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": text}]},
                "taskType": "RETRIEVAL_DOCUMENT",
                "outputDimensionality": DIMS,
            }
            for text in ("first note", "second note")
        ]
    }
    assert query.body["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    assert embedder.identity.prefix_scheme == "none@1"


def test_never_more_than_100_texts_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    with HARNESS.running(monkeypatch) as fake:
        embedder = create_embedder(HARNESS.settings(fake, batch_size=500))
        vectors = embedder.embed([f"note {i}" for i in range(250)], kind="document")
    assert vectors.shape == (250, DIMS)
    assert [len(r.body["requests"]) for r in fake.requests] == [100, 100, 50]


def test_gemini_embedding_2_takes_written_prefixes_instead_of_task_types(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with HARNESS.running(monkeypatch) as fake:
        fake.model = "gemini-embedding-2"
        settings = HARNESS.settings(fake).model_copy(update={"model": "gemini-embedding-2"})
        embedder = create_embedder(settings)
        embedder.embed([embedder.document_text("Plant tomatoes in May.", None)], kind="document")
        embedder.embed([embedder.query_text("when to plant")], kind="query")
    document, query = (r.body["requests"][0] for r in fake.requests)
    assert document["content"]["parts"][0]["text"] == "title: none | text: Plant tomatoes in May."
    assert query["content"]["parts"][0]["text"] == "task: search result | query: when to plant"
    assert "taskType" not in document and "taskType" not in query
    assert embedder.identity.prefix_scheme == "embeddinggemma@1"


def test_google_api_key_is_read_when_gemini_api_key_is_not_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with HARNESS.running(monkeypatch) as fake:
        monkeypatch.delenv("GEMINI_API_KEY")
        monkeypatch.setenv("GOOGLE_API_KEY", KEYS["gemini"])
        embedder = create_embedder(HARNESS.settings(fake))
        embedder.embed(["a"], kind="query")
    assert fake.requests[0].headers["x-goog-api-key"] == KEYS["gemini"]
    assert embedder.describe()["key"] == "GOOGLE_API_KEY"
