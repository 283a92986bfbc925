"""Google's Gemini embedding API: batchEmbedContents for text, embedContent for images/audio.

Requests carry the key in the `x-goog-api-key` header (never in the URL, where proxies and
logs would keep it). gemini-embedding-001 and the -2 preview get a taskType per request;
the stable gemini-embedding-2 takes no taskType and wants written task prefixes instead, the
same strings as EmbeddingGemma's, applied by the prefix scheme.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from apus.embed.base import EmbeddingRequestError, EmbedKind, normalise_rows
from apus.embed.http import as_matrix, batches
from apus.embed.media import MediaSupport, load_media, text_only
from apus.embed.prefixes import SCHEMES, PrefixScheme, detect_family, scheme_for_family
from apus.embed.retry import Deadline, RetryPolicy, parse_retry_after
from apus.embed.transport import ServiceErrors, ServiceTransport

MAX_BATCH = 100  # batchEmbedContents takes at most 100 requests per call
TASK_TYPES: dict[EmbedKind, str] = {"query": "RETRIEVAL_QUERY", "document": "RETRIEVAL_DOCUMENT"}
# Models that embed images and audio into the same space as text.
MULTIMODAL_MODELS = frozenset({"gemini-embedding-2", "gemini-embedding-2-preview"})
# The stable -2 model takes its task as a written prefix, not as a taskType field.
PREFIX_TASK_MODELS = frozenset({"gemini-embedding-2"})
KEY_FIX = "export GEMINI_API_KEY=… (or GOOGLE_API_KEY), or set memory.search.remote.apiKey"
_AUTH_REASONS = frozenset({"API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED"})
_AUTH_STATUSES = frozenset({"UNAUTHENTICATED", "PERMISSION_DENIED"})
_DURATION = re.compile(r"^\s*([0-9.]+)s\s*$")


def model_id(model: str) -> str:
    """`models/gemini-embedding-001` and `gemini-embedding-001` name the same model."""
    return model.strip().removeprefix("models/")


def gemini_scheme(model: str) -> PrefixScheme:
    """The text prefixes a Gemini model wants (none for models that take a taskType)."""
    if model_id(model) in PREFIX_TASK_MODELS:
        return SCHEMES["embeddinggemma"]
    return scheme_for_family(detect_family(model))


def _error_details(payload: Any) -> tuple[str, list[dict[str, Any]]]:
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return "", []
    details = [d for d in error.get("details") or [] if isinstance(d, dict)]
    return str(error.get("status") or ""), details


def _is_auth_failure(response: httpx.Response, payload: Any) -> bool:
    # A wrong key is a 400 INVALID_ARGUMENT whose details say API_KEY_INVALID.
    status, details = _error_details(payload)
    reasons = {str(detail.get("reason")) for detail in details}
    return (
        response.status_code in (401, 403)
        or status in _AUTH_STATUSES
        or bool(reasons & _AUTH_REASONS)
    )


def _retry_hint(response: httpx.Response, payload: Any) -> float | None:
    header = parse_retry_after(response.headers.get("retry-after"))
    if header is not None:
        return header
    for detail in _error_details(payload)[1]:
        if str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


class GeminiClient:
    """Texts in batches of at most 100; one media file per embedContent call."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        api_key: str,
        dims: int = 0,
        timeout_s: float = 60.0,
        batch_timeout_s: float = 600.0,
        batch_size: int = MAX_BATCH,
        key_fix: str = KEY_FIX,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model_id(model)
        self.dims = dims
        self.timeout_s = timeout_s
        self.batch_timeout_s = batch_timeout_s
        self.batch_size = max(1, min(batch_size, MAX_BATCH))
        self._api_key = api_key
        errors = ServiceErrors("Gemini", key_fix, _is_auth_failure, _retry_hint)
        self._transport = ServiceTransport(errors, retry=retry, secrets=[api_key])

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/models/{self.model}:batchEmbedContents"

    @property
    def media_endpoint(self) -> str:
        return f"{self.base_url}/models/{self.model}:embedContent"

    def close(self) -> None:
        self._transport.close()

    def embed(
        self, texts: Sequence[str], *, kind: EmbedKind = "document", timeout: float | None = None
    ) -> np.ndarray:
        deadline = self._deadline(kind, timeout)
        rows = []
        for indexes in batches(texts, max_items=self.batch_size):
            requests = [self._text_request(texts[i], kind) for i in indexes]
            answer = self._post(self.endpoint, {"requests": requests}, deadline)
            embeddings = answer.get("embeddings") if isinstance(answer, dict) else None
            if not isinstance(embeddings, list):
                raise EmbeddingRequestError(f"{self.endpoint} answered without `embeddings`")
            rows.append(
                as_matrix(
                    _values(embeddings, self.endpoint), expected=len(indexes), url=self.endpoint
                )
            )
        return normalise_rows(np.concatenate(rows, axis=0))

    def media_support(self) -> MediaSupport:
        if self.model in MULTIMODAL_MODELS:
            return MediaSupport(True)
        return text_only("gemini", self.model)

    def embed_media(self, path: Path, *, timeout: float | None = None) -> np.ndarray:
        """A document vector for one image or audio file sent as inline data."""
        media = load_media(path)
        inline = {"mimeType": media.mime_type, "data": base64.b64encode(media.data).decode()}
        body: dict[str, Any] = {
            "model": f"models/{self.model}",
            "content": {"parts": [{"inlineData": inline}]},
        }
        if self.model not in PREFIX_TASK_MODELS:
            body["taskType"] = TASK_TYPES["document"]
        if self.dims:
            body["outputDimensionality"] = self.dims
        answer = self._post(self.media_endpoint, body, self._deadline("document", timeout))
        embedding = answer.get("embedding") if isinstance(answer, dict) else None
        vectors = _values([embedding], self.media_endpoint)
        return normalise_rows(as_matrix(vectors, expected=1, url=self.media_endpoint))

    def _text_request(self, text: str, kind: EmbedKind) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": f"models/{self.model}",
            "content": {"parts": [{"text": text}]},
        }
        if self.model not in PREFIX_TASK_MODELS:
            request["taskType"] = TASK_TYPES[kind]
        if self.dims:
            request["outputDimensionality"] = self.dims
        return request

    def _deadline(self, kind: EmbedKind, timeout: float | None) -> Deadline:
        if timeout is not None:
            return Deadline(timeout)
        return Deadline(self.timeout_s if kind == "query" else self.batch_timeout_s)

    def _post(self, url: str, body: dict[str, Any], deadline: Deadline) -> Any:
        headers = {"x-goog-api-key": self._api_key} if self._api_key else {}
        return self._transport.request(
            "POST", url, deadline=deadline, json_body=body, headers=headers
        )


def _values(embeddings: list[Any], url: str) -> list[Any]:
    values = [item.get("values") if isinstance(item, dict) else None for item in embeddings]
    if any(not isinstance(value, list) for value in values):
        raise EmbeddingRequestError(f"{url} answered an embedding without `values`")
    return values
