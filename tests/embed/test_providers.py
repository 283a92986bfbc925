"""Providers against real HTTP servers and files: texts, labels, shapes, errors, resolution."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from apus.config import LocalSettings, RemoteSettings, SearchSettings
from apus.embed.base import (
    EmbeddingConnectionError,
    EmbeddingIdentity,
    EmbeddingRequestError,
    EmbeddingUnavailable,
    probe,
    redact,
    register_secret,
)
from apus.embed.local.catalog import DEFAULT_MODEL, get_manifest
from apus.embed.local.download import model_path, quarantine_dir
from apus.embed.providers import (
    LMSTUDIO_DEFAULT_URL,
    create_embedder,
    resolve_provider,
)
from support.recording_server import RecordingServer, vector_for

API_KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    with RecordingServer(dims=8) as recording:
        yield recording


def unit(text: str, dims: int = 8) -> np.ndarray:
    raw = np.asarray(vector_for(text, dims), dtype=np.float64)
    return raw / np.linalg.norm(raw)


def openai_settings(base_url: str, **extra: object) -> SearchSettings:
    options: dict[str, object] = {
        "provider": "openai-compatible",
        "model": "embeddinggemma-300m",
        "remote": RemoteSettings(base_url=base_url, api_key=API_KEY, batch_size=32),
    }
    options.update(extra)
    return SearchSettings(**options)  # type: ignore[arg-type]


def test_openai_compatible_sends_exact_prefixed_texts_and_labels(server: RecordingServer) -> None:
    server.api_key = API_KEY
    settings = openai_settings(
        server.url + "/v1", query_input_type="query", document_input_type="passage"
    )
    embedder = create_embedder(settings)
    documents = [
        embedder.document_text("Plant tomatoes in May.", "Garden"),
        embedder.document_text("Buy coffee.", None),
    ]
    assert documents == [
        "title: Garden | text: Plant tomatoes in May.",
        "title: none | text: Buy coffee.",
    ]
    vectors = embedder.embed(documents, kind="document")
    query = embedder.query_text("when to plant tomatoes")
    assert query == "task: search result | query: when to plant tomatoes"
    query_vector = embedder.embed([query], kind="query")

    doc_request, query_request = server.requests
    assert doc_request.path == "/v1/embeddings"
    assert doc_request.body == {
        "input": documents,
        "model": "embeddinggemma-300m",
        "input_type": "passage",
    }
    assert doc_request.headers["authorization"] == f"Bearer {API_KEY}"
    assert query_request.body["input"] == [query]
    assert query_request.body["input_type"] == "query"

    assert vectors.dtype == np.float32
    assert vectors.shape == (2, 8)
    np.testing.assert_allclose(vectors[0], unit(documents[0]), rtol=1e-6)
    np.testing.assert_allclose(vectors[1], unit(documents[1]), rtol=1e-6)
    np.testing.assert_allclose(query_vector[0], unit(query), rtol=1e-6)
    embedder.close()


def test_no_labels_are_sent_unless_configured(server: RecordingServer) -> None:
    embedder = create_embedder(openai_settings(server.url))
    embedder.embed(["a"], kind="document")
    (request,) = server.requests
    assert request.path == "/v1/embeddings"  # base without /v1 gets it appended
    assert "input_type" not in request.body


def test_results_are_put_back_in_input_order_and_batched(server: RecordingServer) -> None:
    server.reverse_order = True
    settings = openai_settings(server.url, remote=RemoteSettings(base_url=server.url, batch_size=2))
    embedder = create_embedder(settings)
    texts = [f"text number {i}" for i in range(5)]
    vectors = embedder.embed(texts, kind="document")
    assert [len(r.body["input"]) for r in server.requests] == [2, 2, 1]
    assert server.inputs() == texts
    for row, text in zip(vectors, texts, strict=True):
        np.testing.assert_allclose(row, unit(text), rtol=1e-6)


def test_identity_learns_dims_with_one_probe_and_keys_are_stable(server: RecordingServer) -> None:
    embedder = create_embedder(openai_settings(server.url))
    identity = embedder.identity
    assert identity == EmbeddingIdentity(
        "openai-compatible", "embeddinggemma-300m", "", "embeddinggemma@1", 8
    )
    assert embedder.identity.dims == 8
    assert len(server.requests) == 1  # cached after the first probe
    assert identity.key() == EmbeddingIdentity(*identity.__dict__.values()).key()
    assert identity.key() != EmbeddingIdentity("openai-compatible", "x", "", "none@1", 8).key()


def test_ollama_native_shape(server: RecordingServer) -> None:
    settings = SearchSettings(
        provider="ollama", model="nomic-embed-text", remote=RemoteSettings(base_url=server.url)
    )
    embedder = create_embedder(settings)
    text = embedder.document_text("Buy coffee.", None)
    vectors = embedder.embed([text], kind="document")
    (request,) = server.requests
    assert request.path == "/api/embed"
    assert request.body == {
        "model": "nomic-embed-text",
        "input": ["search_document: Buy coffee."],
        "truncate": True,
    }
    np.testing.assert_allclose(vectors[0], unit("search_document: Buy coffee."), rtol=1e-6)


def test_lmstudio_defaults_to_its_local_port() -> None:
    embedder = create_embedder(SearchSettings(provider="lmstudio", model="text-embedding-qwen3"))
    assert embedder.describe()["endpoint"] == LMSTUDIO_DEFAULT_URL + "/embeddings"
    assert embedder.query_text("x").endswith("\nQuery: x")  # the family shows in the id
    unknown = create_embedder(SearchSettings(provider="lmstudio", model="my-embedder"))
    assert unknown.query_text("x") == "x"


def test_request_errors_are_clear_and_redacted(server: RecordingServer) -> None:
    server.api_key = "the-right-key"
    remote = RemoteSettings(base_url=server.url, api_key=API_KEY, max_retries=0)
    embedder = create_embedder(openai_settings(server.url, remote=remote))
    with pytest.raises(EmbeddingRequestError) as caught:
        embedder.embed(["a"], kind="query")
    assert "HTTP 401" in str(caught.value)
    assert API_KEY not in str(caught.value)

    server.api_key = None
    server.fail_status = 500
    with pytest.raises(EmbeddingRequestError, match="HTTP 500"):
        embedder.embed(["a"], kind="query")
    assert embedder.describe()["state"] == "failed"


def test_an_unreachable_remote_raises_a_connection_error() -> None:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        port = probe_socket.getsockname()[1]
    embedder = create_embedder(openai_settings(f"http://127.0.0.1:{port}/v1"))
    with pytest.raises(EmbeddingConnectionError, match="cannot connect"):
        embedder.embed(["a"], kind="query")


def test_probe_reports_dims_or_the_timeout(server: RecordingServer) -> None:
    result = probe(create_embedder(openai_settings(server.url)), timeout_s=10)
    assert (result.ok, result.dims, result.error) == (True, 8, None)

    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        result = probe(create_embedder(openai_settings(url)), timeout_s=1)
    assert result.ok is False
    assert result.error == "embedding probe timed out after 1s"


def test_resolution_of_none_and_misconfigured_remotes() -> None:
    off = resolve_provider(SearchSettings(provider="none"))
    assert (off.embedder, off.state, off.reason) == (None, "off", "provider is none")

    # A provider named explicitly never degrades quietly: it resolves, then fails on use
    # with the reason and the fix, which search reports as "unavailable".
    no_url = resolve_provider(SearchSettings(provider="openai-compatible", model="m"))
    assert no_url.state == "unavailable"
    assert "remote.baseUrl" in no_url.fix
    assert no_url.embedder is not None
    with pytest.raises(EmbeddingUnavailable, match="needs a base URL") as caught:
        no_url.embedder.embed(["garden"], kind="query")
    assert caught.value.fix is not None and "remote.baseUrl" in caught.value.fix
    assert no_url.embedder.describe()["state"] == "failed"

    remote = resolve_provider(openai_settings("http://127.0.0.1:9/v1"))
    assert remote.state == "semantic"  # failures surface later, as request errors


def test_auto_without_a_downloaded_model_is_keyword_only_with_the_fix() -> None:
    resolution = resolve_provider(SearchSettings(provider="auto"))
    assert resolution.embedder is None
    assert resolution.state == "keyword-only"
    assert "not downloaded" in resolution.reason
    assert "apus models pull embeddinggemma-300m" in resolution.fix


def test_a_local_model_path_takes_family_dims_and_sha_from_the_file(tiny_model: Path) -> None:
    settings = SearchSettings(provider="local", local=LocalSettings(model_path=str(tiny_model)))
    resolution = resolve_provider(settings)
    assert resolution.state == "semantic"
    assert resolution.embedder is not None
    assert resolution.embedder.identity == EmbeddingIdentity(
        provider="local",
        model="tiny-embeddinggemma.gguf",
        model_sha256=hashlib.sha256(tiny_model.read_bytes()).hexdigest(),
        prefix_scheme="embeddinggemma@1",
        dims=32,
    )
    assert resolution.embedder.describe()["state"] == "stopped"  # nothing started yet

    override = SearchSettings(
        provider="local", local=LocalSettings(model_path=str(tiny_model), prefix_scheme="none")
    )
    embedder = create_embedder(override)
    assert embedder.identity.prefix_scheme == "none@1"
    assert embedder.query_text("garden") == "garden"


def test_a_local_model_path_that_is_not_gguf_is_keyword_only(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_text("not a model", encoding="utf-8")
    resolution = resolve_provider(
        SearchSettings(provider="local", local=LocalSettings(model_path=str(fake)))
    )
    assert resolution.state == "keyword-only"
    assert "not a usable GGUF" in resolution.reason


def test_a_damaged_catalogue_model_is_quarantined_and_keyword_only() -> None:
    manifest = get_manifest(DEFAULT_MODEL)
    path = model_path(manifest)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"GGUF" + b"\0" * 1000)  # an interrupted copy: far too short
    resolution = resolve_provider(SearchSettings(provider="local"))
    assert resolution.state == "keyword-only"
    assert "failed verification" in resolution.reason
    assert f"apus models pull {DEFAULT_MODEL}" in resolution.fix
    assert not path.exists()
    assert len(list(quarantine_dir().iterdir())) == 1


def test_redaction_hides_keys_but_keeps_ordinary_words() -> None:
    register_secret("s3cret-server-key")
    text = redact(
        "Authorization: Bearer abc.def and s3cret-server-key and "
        "hf_AbCdEfGh1234567890XyZ in hf_hub_download"
    )
    assert "abc.def" not in text
    assert "s3cret-server-key" not in text
    assert "hf_AbCdEfGh1234567890XyZ" not in text
    assert "hf_hub_download" in text
