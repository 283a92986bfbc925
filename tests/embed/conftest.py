"""Fixtures for the embedding tests: private XDG dirs, a tiny GGUF model, fast server specs."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apus.embed.local.filehash import file_sha256
from apus.embed.local.server_manager import ManagedServer, ServerSpec

# Short enough that orphan and idle tests finish quickly, long enough not to spin.
WATCHDOG_INTERVAL_S = 0.3


@pytest.fixture(autouse=True)
def embed_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own data/cache/config/state/runtime folders."""
    root = tmp_path / "xdg"
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        folder = root / name.lower()
        folder.mkdir(parents=True)
        monkeypatch.setenv(name, str(folder))
    runtime = root / "runtime"
    # platformdirs ignores an XDG_RUNTIME_DIR that is not private (0700).
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    return root


@pytest.fixture(autouse=True)
def no_ambient_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A developer's own keys and AWS files must not leak into (or rescue) a test."""
    for name in (
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "VOYAGE_API_KEY",
        "MISTRAL_API_KEY",
        "DEEPINFRA_API_KEY",
        "GITHUB_TOKEN",
        "COPILOT_GITHUB_TOKEN",
        "GITHUB_API_URL",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    # Never ask an instance metadata service for a role: that would be a network request.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def fast_spec() -> Callable[..., ServerSpec]:
    """Builds a ServerSpec for a model file with a short watchdog interval."""

    def build(model: Path, **overrides: Any) -> ServerSpec:
        options: dict[str, Any] = {
            "model_path": model,
            "model_sha256": file_sha256(model),
            "context": 512,
            "startup_timeout_seconds": 60.0,
            "watchdog_interval_seconds": WATCHDOG_INTERVAL_S,
        }
        options.update(overrides)
        return ServerSpec(**options)

    return build


@pytest.fixture
def managed(tiny_model: Path) -> Iterator[list[ManagedServer]]:
    """Collects ManagedServers a test creates and stops their processes afterwards."""
    servers: list[ManagedServer] = []
    yield servers
    for server in servers:
        server.stop()


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The sleeps the embedding code asks for, in order (each still sleeps): how long a retry
    waited, whatever the machine's load."""
    asked: list[float] = []
    real = time.sleep

    def sleep(seconds: float) -> None:
        if sys._getframe(1).f_globals.get("__name__", "").startswith("apus.embed"):
            asked.append(seconds)
        real(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    return asked


@pytest.fixture
def sent_timeouts(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, float]]:
    """The timeouts (connect, read, write, pool) each HTTP request was sent with, in order
    (each is still sent): what an attempt was allowed, not how long it took."""
    sent: list[dict[str, float]] = []
    real = httpx.Client.send

    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        sent.append(dict(request.extensions["timeout"]))
        return real(self, request, **kwargs)

    monkeypatch.setattr(httpx.Client, "send", send)
    return sent
