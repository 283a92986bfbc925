"""HTTP embedding clients: OpenAI-compatible `/v1/embeddings` and Ollama's native `/api/embed`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import numpy as np

from apus import __version__
from apus.embed.base import (
    EmbeddingConnectionError,
    EmbeddingRequestError,
    EmbeddingTimeout,
    normalise_rows,
    redact,
    register_secret,
)

# A rough tokens-per-character ratio, only to size requests; the server truncates for real.
_CHARS_PER_TOKEN = 3
_ERROR_BODY_CHARS = 300


def batches(
    texts: Sequence[str], *, max_items: int, max_tokens: int | None = None
) -> Iterator[list[int]]:
    """Split indexes of `texts` into runs of at most `max_items` and about `max_tokens`."""
    current: list[int] = []
    tokens = 0
    for index, text in enumerate(texts):
        estimate = len(text) // _CHARS_PER_TOKEN + 2
        too_many = len(current) >= max_items
        too_long = max_tokens is not None and bool(current) and tokens + estimate > max_tokens
        if too_many or too_long:
            yield current
            current, tokens = [], 0
        current.append(index)
        tokens += estimate
    if current:
        yield current


class _HttpClient:
    """Shared plumbing: one httpx client, bearer auth, redacted errors, batching."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str = "",
        timeout_s: float = 60.0,
        batch_size: int = 32,
        batch_tokens: int | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        if api_key:
            register_secret(api_key)
        self.timeout_s = timeout_s
        self.batch_size = max(1, batch_size)
        self.batch_tokens = batch_tokens
        headers = {"User-Agent": f"apus/{__version__}"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(headers=headers, timeout=self._timeout(timeout_s))

    @property
    def endpoint(self) -> str:
        raise NotImplementedError

    def close(self) -> None:
        self._client.close()

    def embed(
        self, texts: Sequence[str], *, input_type: str = "", timeout: float | None = None
    ) -> np.ndarray:
        """Embed `texts` as they are (already prefixed); rows L2-normalised, in input order."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        rows: list[np.ndarray] = []
        for indexes in batches(texts, max_items=self.batch_size, max_tokens=self.batch_tokens):
            chunk = [texts[i] for i in indexes]
            rows.append(self._embed_batch(chunk, input_type=input_type, timeout=timeout))
        widths = {row.shape[1] for row in rows}
        if len(widths) != 1:
            raise EmbeddingRequestError(f"the provider returned vectors of mixed sizes {widths}")
        return normalise_rows(np.concatenate(rows, axis=0))

    def _embed_batch(
        self, texts: list[str], *, input_type: str, timeout: float | None
    ) -> np.ndarray:
        raise NotImplementedError

    def _post(self, payload: dict[str, Any], timeout: float | None) -> Any:
        url = self.endpoint
        try:
            response = self._client.post(
                url,
                json=payload,
                timeout=self._timeout(timeout) if timeout is not None else httpx.USE_CLIENT_DEFAULT,
            )
        except httpx.TimeoutException as exc:
            limit = timeout if timeout is not None else self.timeout_s
            raise EmbeddingTimeout(f"{url} did not answer within {limit:g}s") from exc
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            raise EmbeddingConnectionError(self._transport_reason(url, exc)) from exc
        if response.status_code in (401, 403):
            raise EmbeddingRequestError(
                f"{url} refused the request (HTTP {response.status_code}): check the API key",
                fix="set memory.search.remote.apiKey (or APUS_MEMORY__SEARCH__REMOTE__API_KEY)",
            )
        if response.status_code >= 400:
            body = redact(response.text[:_ERROR_BODY_CHARS], [self._api_key])
            raise EmbeddingRequestError(f"{url} answered HTTP {response.status_code}: {body}")
        try:
            return response.json()
        except json.JSONDecodeError as exc:
            raise EmbeddingRequestError(f"{url} answered with something that is not JSON") from exc

    @staticmethod
    def _timeout(seconds: float) -> httpx.Timeout:
        # Connecting to a local or LAN server is quick or hopeless; the answer itself may not be.
        return httpx.Timeout(seconds, connect=min(seconds, 10.0))

    @staticmethod
    def _transport_reason(url: str, exc: Exception) -> str:
        if isinstance(exc, httpx.ConnectError):
            return f"cannot connect to {url} (is the server running?)"
        if isinstance(exc, httpx.RemoteProtocolError):
            return f"{url} closed the connection mid-request"
        return f"request to {url} failed: {type(exc).__name__}"


class OpenAIEmbeddingsClient(_HttpClient):
    """POST {base}/v1/embeddings (or {base}/embeddings when base already ends in /v1)."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str = "",
        api_key: str = "",
        timeout_s: float = 60.0,
        batch_size: int = 32,
        batch_tokens: int | None = None,
    ) -> None:
        super().__init__(
            base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            batch_size=batch_size,
            batch_tokens=batch_tokens,
        )
        self.model = model

    @property
    def endpoint(self) -> str:
        if self.base_url.endswith("/v1"):
            return f"{self.base_url}/embeddings"
        return f"{self.base_url}/v1/embeddings"

    def _embed_batch(
        self, texts: list[str], *, input_type: str, timeout: float | None
    ) -> np.ndarray:
        payload: dict[str, Any] = {"input": texts}
        if self.model:
            payload["model"] = self.model
        if input_type:
            payload["input_type"] = input_type
        answer = self._post(payload, timeout)
        try:
            items = sorted(answer["data"], key=lambda item: int(item["index"]))
            vectors = [item["embedding"] for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingRequestError(f"{self.endpoint} answered without `data` vectors") from exc
        return _as_matrix(vectors, expected=len(texts), url=self.endpoint)


class OllamaEmbeddingsClient(_HttpClient):
    """Ollama's native POST {base}/api/embed ({"model", "input": [...]} -> {"embeddings"})."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        timeout_s: float = 60.0,
        batch_size: int = 32,
    ) -> None:
        super().__init__(base_url, timeout_s=timeout_s, batch_size=batch_size)
        self.model = model

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/api/embed"

    def _embed_batch(
        self, texts: list[str], *, input_type: str, timeout: float | None
    ) -> np.ndarray:
        answer = self._post({"model": self.model, "input": texts, "truncate": True}, timeout)
        vectors = answer.get("embeddings") if isinstance(answer, dict) else None
        if not isinstance(vectors, list):
            raise EmbeddingRequestError(f"{self.endpoint} answered without `embeddings`")
        return _as_matrix(vectors, expected=len(texts), url=self.endpoint)


def _as_matrix(vectors: list[Any], *, expected: int, url: str) -> np.ndarray:
    if len(vectors) != expected:
        raise EmbeddingRequestError(f"{url} returned {len(vectors)} vectors for {expected} texts")
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingRequestError(f"{url} returned vectors of uneven length") from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise EmbeddingRequestError(f"{url} returned malformed vectors (shape {matrix.shape})")
    return matrix
