"""One harness per hosted provider: its fake, settings and environment that reach it, and how
its answers look, so failure tests can run the same scenario against every protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from apus.config import RemoteSettings, SearchSettings
from support.fake_apis import BedrockFake, CopilotFake, GeminiFake, OpenAIShapedFake
from support.fake_service import FakeService

# Key-shaped values that do not match the redaction patterns on purpose: only the registered
# secrets mechanism can hide them.
KEYS = {
    "openai": "sk-proj-OPENAIkey0000000000000000000000",
    "voyage": "pa-VOYAGEkey11111111111111111111111111",
    "mistral": "MISTRALkey2222222222222222222222",
    "deepinfra": "DEEPINFRAkey33333333333333333333",
    "gemini": "AIzaGEMINIkey444444444444444444444444444",
    "github-copilot": "gho_COPILOTgithubtoken5555555555555555",
}
AWS_ACCESS_KEY = "AKIAAPUSTEST00000001"
AWS_SECRET_KEY = "AWSsecret6666666666666666666666666666666"
AWS_REGION = "eu-west-1"
DIMS = 8


@dataclass
class Harness:
    provider: str
    secret: str  # what must never appear in output, logs or errors
    marker: str  # a substring of the embedding request's path
    fake: Callable[[], FakeService]
    base_url: Callable[[FakeService], str]
    answer: Callable[[list[list[float]]], Any]  # a success body carrying these vectors
    env: Callable[[FakeService, str], dict[str, str]]  # environment for a given key

    def settings(self, fake: FakeService | None = None, **remote: Any) -> SearchSettings:
        """Settings that reach `fake` (or remote.base_url, when given instead)."""
        options = {"base_url": self.base_url(fake) if fake else "", **remote}
        return SearchSettings(
            provider=self.provider,
            output_dimensionality=DIMS,
            remote=RemoteSettings(**options),
        )

    @contextmanager
    def running(self, monkeypatch: pytest.MonkeyPatch, key: str | None = None) -> Iterator[Any]:
        """The fake, started, with the environment pointing at it (a wrong `key` if given)."""
        with self.fake() as fake:
            for name, value in self.env(fake, key or self.secret).items():
                monkeypatch.setenv(name, value)
            yield fake


def _openai_answer(vectors: list[list[float]]) -> Any:
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return {"object": "list", "data": data, "model": "m"}


def _openai_like(provider: str, env: str, prefix: str, dims_field: str) -> Harness:
    return Harness(
        provider,
        KEYS[provider],
        "/embeddings",
        lambda: OpenAIShapedFake(
            api_key=KEYS[provider], style=provider, prefix=prefix, dims_field=dims_field
        ),
        lambda fake: fake.url + prefix,
        _openai_answer,
        lambda fake, key: {env: key},
    )


def _copilot_env(fake: FakeService, key: str) -> dict[str, str]:
    return {"GITHUB_API_URL": fake.url, "COPILOT_GITHUB_TOKEN": key}


def _bedrock_env(fake: FakeService, secret: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": AWS_ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_REGION": AWS_REGION,
    }


HARNESSES: dict[str, Harness] = {
    harness.provider: harness
    for harness in (
        _openai_like("openai", "OPENAI_API_KEY", "/v1", "dimensions"),
        _openai_like("voyage", "VOYAGE_API_KEY", "/v1", "output_dimension"),
        _openai_like("mistral", "MISTRAL_API_KEY", "/v1", "output_dimension"),
        _openai_like("deepinfra", "DEEPINFRA_API_KEY", "/v1/openai", "dimensions"),
        Harness(
            "gemini",
            KEYS["gemini"],
            ":batchEmbedContents",
            lambda: GeminiFake(api_key=KEYS["gemini"]),
            lambda fake: fake.url + "/v1beta",
            lambda vectors: {"embeddings": [{"values": v} for v in vectors]},
            lambda fake, key: {"GEMINI_API_KEY": key},
        ),
        Harness(
            "bedrock",
            AWS_SECRET_KEY,
            "/invoke",
            lambda: BedrockFake(
                access_key=AWS_ACCESS_KEY, secret_key=AWS_SECRET_KEY, region=AWS_REGION
            ),
            lambda fake: fake.url,
            lambda vectors: {"embedding": vectors[0], "inputTextTokenCount": 3},
            _bedrock_env,
        ),
        Harness(
            "github-copilot",
            KEYS["github-copilot"],
            "/embeddings",
            lambda: CopilotFake(github_token=KEYS["github-copilot"]),
            lambda fake: fake.url,
            _openai_answer,
            _copilot_env,
        ),
    )
}
