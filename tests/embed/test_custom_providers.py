"""[models.providers.<id>] entries: named providers with their own api, URL, key and model;
unknown names and apis are refused by settings validation with the names that exist."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apus.config import load_settings
from apus.embed.base import EmbeddingUnavailable
from apus.embed.providers import create_embedder, is_remote, resolve_provider
from apus.errors import ConfigError
from support.fake_apis import OpenAIShapedFake
from support.recording_server import RecordingServer


def settings_from(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    return load_settings(config_file=config, environ={}).search


def test_an_ollama_entry_for_a_second_machine(tmp_path: Path) -> None:
    with RecordingServer(dims=8) as server:
        search = settings_from(
            tmp_path,
            f"""
[memory.search]
provider = "ollama-5080"

[models.providers.ollama-5080]
api = "ollama"
baseUrl = "{server.url}"
model = "nomic-embed-text"
""",
        )
        embedder = create_embedder(search)
        embedder.embed([embedder.document_text("Buy coffee.", None)], kind="document")
    (request,) = server.requests
    assert request.path == "/api/embed"
    assert request.body["model"] == "nomic-embed-text"
    assert request.body["input"] == ["search_document: Buy coffee."]
    assert embedder.identity.provider == "ollama-5080"
    assert is_remote("ollama-5080")
    assert embedder.describe()["api"] == "ollama"


def test_an_entry_speaking_a_hosted_api_uses_its_own_key_and_url(tmp_path: Path) -> None:
    key = "sk-entry-key-0123456789abcdef"
    with OpenAIShapedFake(api_key=key, prefix="/proxy/v1") as fake:
        search = settings_from(
            tmp_path,
            f"""
[memory.search]
provider = "work-openai"
outputDimensionality = 8

[models.providers.work-openai]
api = "openai"
baseUrl = "{fake.url}/proxy/v1"
apiKey = "{key}"
model = "text-embedding-3-large"
""",
        )
        embedder = create_embedder(search)
        embedder.embed(["a"], kind="query")
    (request,) = fake.requests
    assert request.path == "/proxy/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {key}"
    assert request.body["model"] == "text-embedding-3-large"
    described = embedder.describe()
    assert described["key"] == "apiKey in [models.providers.work-openai]"
    assert key not in json.dumps(described)


def test_an_entry_named_like_a_built_in_provider_configures_it(tmp_path: Path) -> None:
    key = "sk-built-in-name-0123456789ab"
    with OpenAIShapedFake(api_key=key) as fake:
        search = settings_from(
            tmp_path,
            f"""
memory.search.provider = "openai"
memory.search.outputDimensionality = 8
models.providers.openai = {{ baseUrl = "{fake.url}/v1", apiKey = "{key}" }}
""",
        )
        create_embedder(search).embed(["a"], kind="query")
    assert fake.requests[0].body["model"] == "text-embedding-3-small"


def test_an_entry_without_a_key_is_unavailable_and_says_where_to_put_one(tmp_path: Path) -> None:
    search = settings_from(
        tmp_path,
        """
memory.search.provider = "team"
models.providers.team = { api = "mistral" }
""",
    )
    resolution = resolve_provider(search)
    assert resolution.state == "unavailable"
    assert resolution.fix == (
        "set apiKey in [models.providers.team] "
        "(or export MISTRAL_API_KEY=…, or set memory.search.remote.apiKey)"
    )
    assert resolution.embedder is not None
    with pytest.raises(EmbeddingUnavailable, match="Mistral needs an API key"):
        resolution.embedder.embed(["a"], kind="query")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'memory.search.provider = "opnai"\n',
            "unknown embedding provider 'opnai'; built in: auto, local, none, ollama",
        ),
        (
            'memory.search.provider = "gpu"\nmodels.providers.box = { api = "ollama" }\n',
            "entries of [models.providers]: box",
        ),
        ('models.providers.box = { api = "olama" }\n', "unknown api 'olama'; one of: openai"),
        ('models.providers.box = { baseUrl = "http://x" }\n', "[models.providers.box] needs `api`"),
    ],
)
def test_unknown_names_are_refused_with_what_exists(
    tmp_path: Path, text: str, message: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(config_file=config, environ={})
    assert message in caught.value.reason
    assert "line 1" in caught.value.reason or "line 2" in caught.value.reason
