"""HTTP embedding clients: OpenAI-shaped `/embeddings` and Ollama's native `/api/embed`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from apus.embed.base import EmbeddingRequestError, EmbedKind, normalise_rows
from apus.embed.retry import Deadline, RetryPolicy
from apus.embed.transport import ServiceErrors, ServiceTransport

# A rough tokens-per-character ratio, only to size requests; the server truncates for real.
_CHARS_PER_TOKEN = 3
_SHAPE_FIX = "check memory.search.remote.baseUrl: it should point at the provider's API"


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


class HttpEmbeddingClient:
    """Shared plumbing: a ServiceTransport, a budget per kind of call, batching, bearer auth.

    `timeout_s` bounds a query embedding and `batch_timeout_s` (default: the same) a document
    batch, each including retries; a caller's own `timeout` replaces either.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str = "",
        timeout_s: float = 60.0,
        batch_timeout_s: float | None = None,
        batch_size: int = 32,
        batch_tokens: int | None = None,
        errors: ServiceErrors | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.batch_timeout_s = batch_timeout_s or timeout_s
        self.batch_size = max(1, batch_size)
        self.batch_tokens = batch_tokens
        service = errors or ServiceErrors(urlsplit(self.base_url).netloc or self.base_url)
        self._transport = ServiceTransport(service, retry=retry, secrets=[api_key])

    @property
    def endpoint(self) -> str:
        raise NotImplementedError

    def close(self) -> None:
        self._transport.close()

    def deadline(self, kind: EmbedKind, timeout: float | None) -> Deadline:
        if timeout is not None:
            return Deadline(timeout)
        return Deadline(self.timeout_s if kind == "query" else self.batch_timeout_s)

    def embed(
        self, texts: Sequence[str], *, kind: EmbedKind = "document", timeout: float | None = None
    ) -> np.ndarray:
        """Embed `texts` as they are (already prefixed); rows L2-normalised, in input order."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        deadline = self.deadline(kind, timeout)
        self._prepare(deadline)
        rows: list[np.ndarray] = []
        for indexes in batches(texts, max_items=self.batch_size, max_tokens=self.batch_tokens):
            chunk = [texts[i] for i in indexes]
            rows.append(self._embed_batch(chunk, kind=kind, deadline=deadline))
        widths = {row.shape[1] for row in rows}
        if len(widths) != 1:
            raise EmbeddingRequestError(f"the provider returned vectors of mixed sizes {widths}")
        return normalise_rows(np.concatenate(rows, axis=0))

    def _embed_batch(self, texts: list[str], *, kind: EmbedKind, deadline: Deadline) -> np.ndarray:
        raise NotImplementedError

    def _prepare(self, deadline: Deadline) -> None:
        """Work due before the first batch (a login, a model check); nothing by default."""

    def _auth_headers(self, deadline: Deadline) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _post(self, payload: dict[str, Any], deadline: Deadline) -> Any:
        return self._transport.request(
            "POST",
            self.endpoint,
            deadline=deadline,
            json_body=payload,
            headers=self._auth_headers(deadline),
        )


class OpenAIEmbeddingsClient(HttpEmbeddingClient):
    """POST {base}/v1/embeddings (or {base}/embeddings when base ends in /v1, or always when
    `append_v1` is off, as for hosted APIs whose base URL already carries the version)."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str = "",
        labels: Mapping[EmbedKind, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        append_v1: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(base_url, **options)
        self.model = model
        self.labels: dict[EmbedKind, str] = dict(labels or {})
        self.extra_body = dict(extra_body or {})
        self.append_v1 = append_v1

    @property
    def endpoint(self) -> str:
        if self.base_url.endswith("/v1") or not self.append_v1:
            return f"{self.base_url}/embeddings"
        return f"{self.base_url}/v1/embeddings"

    def _embed_batch(self, texts: list[str], *, kind: EmbedKind, deadline: Deadline) -> np.ndarray:
        payload: dict[str, Any] = {"input": texts}
        if self.model:
            payload["model"] = self.model
        if self.labels.get(kind):
            payload["input_type"] = self.labels[kind]
        payload.update(self.extra_body)
        answer = self._post(payload, deadline)
        try:
            items = sorted(answer["data"], key=lambda item: int(item["index"]))
            vectors = [item["embedding"] for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingRequestError(
                f"{self.endpoint} answered without `data` vectors", fix=_SHAPE_FIX
            ) from exc
        return as_matrix(vectors, expected=len(texts), url=self.endpoint)


class OllamaEmbeddingsClient(HttpEmbeddingClient):
    """Ollama's native POST {base}/api/embed ({"model", "input": [...]} -> {"embeddings"})."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        **options: Any,
    ) -> None:
        super().__init__(base_url, **options)
        self.model = model

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/api/embed"

    def _embed_batch(self, texts: list[str], *, kind: EmbedKind, deadline: Deadline) -> np.ndarray:
        # Ollama's native API has no input types: the model's prefixes carry the task.
        answer = self._post({"model": self.model, "input": texts, "truncate": True}, deadline)
        vectors = answer.get("embeddings") if isinstance(answer, dict) else None
        if not isinstance(vectors, list):
            raise EmbeddingRequestError(
                f"{self.endpoint} answered without `embeddings`", fix=_SHAPE_FIX
            )
        return as_matrix(vectors, expected=len(texts), url=self.endpoint)


def as_matrix(vectors: list[Any], *, expected: int, url: str) -> np.ndarray:
    """A (texts x dims) float32 matrix from the lists a service returned, or a clear error."""
    if len(vectors) != expected:
        raise EmbeddingRequestError(
            f"{url} returned {len(vectors)} vectors for {expected} texts", fix=_SHAPE_FIX
        )
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingRequestError(
            f"{url} returned vectors of uneven length", fix=_SHAPE_FIX
        ) from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise EmbeddingRequestError(
            f"{url} returned malformed vectors (shape {matrix.shape})", fix=_SHAPE_FIX
        )
    return matrix
