"""GitHub Copilot's embeddings, reached with a GitHub token.

The GitHub token is traded at the GitHub API for a short-lived Copilot token (renewed before
it expires); the configured model is checked once against the Copilot model list; texts then
go to the OpenAI-shaped `/embeddings` of the Copilot API. The GitHub token only ever goes to
the GitHub API, the Copilot token only to the configured base URL or a githubcopilot.com host
the exchange names.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from apus import __version__
from apus.embed.base import (
    EmbeddingAuthError,
    EmbeddingRequestError,
    EmbeddingUnavailable,
    EmbedKind,
)
from apus.embed.http import OpenAIEmbeddingsClient
from apus.embed.retry import Deadline, RetryPolicy
from apus.embed.transport import ServiceErrors, ServiceTransport

GITHUB_API_URL = "https://api.github.com"
TOKEN_PATH = "/copilot_internal/v2/token"
KEY_FIX = (
    "export COPILOT_GITHUB_TOKEN=… (or GITHUB_TOKEN=…) with a token of an account that has "
    "Copilot (`gh auth token` prints one), or set memory.search.remote.apiKey"
)
# The Copilot API answers only clients that name an integration and an editor.
COPILOT_HEADERS = {"Copilot-Integration-Id": "vscode-chat", "Editor-Version": f"apus/{__version__}"}
_RENEW_BEFORE_S = 120.0  # renew a Copilot token this long before it expires


def github_api_url() -> str:
    """GitHub's API, or the one GITHUB_API_URL names (GitHub Enterprise, GitHub Actions)."""
    return (os.environ.get("GITHUB_API_URL") or GITHUB_API_URL).rstrip("/")


def _github_refused(response: httpx.Response, payload: Any) -> bool:
    # 404 on the token endpoint: the account has no Copilot seat.
    return response.status_code in (401, 403, 404)


@dataclass(frozen=True)
class CopilotToken:
    value: str
    renew_at: float  # unix seconds: a while before it expires, never past half its life
    api_url: str  # the Copilot API the exchange points at ("" when it names none we accept)


class CopilotSession:
    """Holds the current Copilot token; trades the GitHub token again when it runs out."""

    def __init__(
        self, github_token: str, key_fix: str = KEY_FIX, *, retry: RetryPolicy | None = None
    ) -> None:
        self._github_token = github_token
        self._transport = ServiceTransport(
            ServiceErrors("GitHub", key_fix, _github_refused), retry=retry, secrets=[github_token]
        )
        self._token: CopilotToken | None = None
        self._lock = threading.Lock()

    @property
    def token_url(self) -> str:
        return f"{github_api_url()}{TOKEN_PATH}"

    def token(self, deadline: Deadline) -> CopilotToken:
        with self._lock:
            current = self._token
            if current is None or time.time() >= current.renew_at:
                current = self._exchange(deadline)
                self._token = current
            return current

    def forget(self) -> bool:
        """Drop the token (the API refused it before its time); False if there was none."""
        with self._lock:
            had_token, self._token = self._token is not None, None
            return had_token

    def close(self) -> None:
        self._transport.close()

    def _exchange(self, deadline: Deadline) -> CopilotToken:
        answer = self._transport.request(
            "GET",
            self.token_url,
            deadline=deadline,
            headers={"Authorization": f"token {self._github_token}", "Accept": "application/json"},
        )
        token = answer.get("token") if isinstance(answer, dict) else None
        expires = answer.get("expires_at") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token or not isinstance(expires, int | float):
            raise EmbeddingRequestError(f"{self.token_url} answered without a Copilot token")
        self._transport.add_secret(token)
        endpoints = answer.get("endpoints")
        api = endpoints.get("api") if isinstance(endpoints, dict) else None
        now = time.time()
        life = max(0.0, float(expires) - now)
        return CopilotToken(token, now + life - min(_RENEW_BEFORE_S, life / 2), _trusted_api(api))


def _trusted_api(url: Any) -> str:
    """Accept an API address from the exchange only on https at githubcopilot.com."""
    if not isinstance(url, str):
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    trusted = host == "githubcopilot.com" or host.endswith(".githubcopilot.com")
    return url.rstrip("/") if parts.scheme == "https" and trusted else ""


def _is_embedding_model(entry: dict[str, Any]) -> bool:
    capabilities = entry.get("capabilities")
    if isinstance(capabilities, dict) and capabilities.get("type") == "embeddings":
        return True
    endpoints = entry.get("supported_endpoints")
    if isinstance(endpoints, list) and any("embeddings" in str(e) for e in endpoints):
        return True
    return "embedding" in str(entry.get("id", ""))


class CopilotEmbeddingsClient(OpenAIEmbeddingsClient):
    """OpenAI-shaped embeddings authorised by the session's Copilot token."""

    def __init__(
        self, session: CopilotSession, *, base_url: str, configured: bool, **options: Any
    ) -> None:
        super().__init__(base_url, append_v1=False, **options)
        self.session = session
        self._configured = configured  # a user-set base URL wins over the exchange's
        self._model_checked = False

    def close(self) -> None:
        super().close()
        self.session.close()

    def _prepare(self, deadline: Deadline) -> None:
        # Before batching: the model list may lower the batch size (limits.max_inputs).
        if not self._model_checked:
            self._check_model(self._auth_headers(deadline), deadline)

    def _auth_headers(self, deadline: Deadline) -> dict[str, str]:
        token = self.session.token(deadline)
        if not self._configured and token.api_url:
            self.base_url = token.api_url
        return {"Authorization": f"Bearer {token.value}", **COPILOT_HEADERS}

    def _embed_batch(self, texts: list[str], *, kind: EmbedKind, deadline: Deadline) -> np.ndarray:
        try:
            return super()._embed_batch(texts, kind=kind, deadline=deadline)
        except EmbeddingAuthError:
            # A Copilot token can be revoked before its expiry: trade once more, then give up.
            # (No token at all means GitHub refused the exchange: asking again changes nothing.)
            if not self.session.forget():
                raise
            return super()._embed_batch(texts, kind=kind, deadline=deadline)

    def _check_model(self, headers: dict[str, str], deadline: Deadline) -> None:
        url = f"{self.base_url}/models"
        answer = self._transport.request("GET", url, deadline=deadline, headers=headers)
        listed = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(listed, list):
            raise EmbeddingRequestError(f"{url} answered without a model list")
        offered = {
            str(entry["id"]): entry
            for entry in listed
            if isinstance(entry, dict) and entry.get("id") and _is_embedding_model(entry)
        }
        entry = offered.get(self.model)
        if entry is None:
            names = ", ".join(sorted(offered)) or "none"
            raise EmbeddingUnavailable(
                f"GitHub Copilot does not offer the embedding model {self.model} to this "
                f"account (embedding models offered: {names})",
                fix=f"set memory.search.model to one of: {names}",
            )
        limits = (entry.get("capabilities") or {}).get("limits") or {}
        if isinstance(limits.get("max_inputs"), int) and limits["max_inputs"] > 0:
            self.batch_size = min(self.batch_size, limits["max_inputs"])
        self._model_checked = True
