"""The Embedder for providers Apus does not run: OpenAI-compatible servers, LM Studio, Ollama."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from apus.embed.base import EmbeddingIdentity, EmbedKind
from apus.embed.http import OllamaEmbeddingsClient, OpenAIEmbeddingsClient
from apus.embed.prefixes import PrefixedTexts, PrefixScheme

_DIMS_PROBE_TEXT = "dimension probe"


class RemoteEmbedder(PrefixedTexts):
    """Prefixes by model family, labels by `input_type` when configured, and learns the
    vector width with one request the first time the identity is asked for."""

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        client: OpenAIEmbeddingsClient | OllamaEmbeddingsClient,
        scheme: PrefixScheme,
        query_input_type: str = "",
        document_input_type: str = "",
    ) -> None:
        self._provider = provider
        self._model = model
        self._client = client
        self._scheme = scheme
        self._labels = {"query": query_input_type, "document": document_input_type}
        self._dims: int | None = None
        self._lock = threading.Lock()
        self._last_error: str | None = None

    @property
    def identity(self) -> EmbeddingIdentity:
        with self._lock:
            if self._dims is None:
                probe = self._embed([self._scheme.apply_query(_DIMS_PROBE_TEXT)], "query", None)
                self._dims = int(probe.shape[1])
            dims = self._dims
        # Remote weights are not ours to hash: the model id stands for them.
        return EmbeddingIdentity(self._provider, self._model, "", self._scheme.label, dims)

    def embed(
        self, texts: Sequence[str], *, kind: EmbedKind, timeout: float | None = None
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dims), dtype=np.float32)
        vectors = self._embed(texts, kind, timeout)
        with self._lock:
            if self._dims is None:
                self._dims = int(vectors.shape[1])
        return vectors

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self._provider,
            "model": self._model,
            "file": None,
            "dims": self._dims,
            "prefix_scheme": self._scheme.label,
            "device": "remote",
            "endpoint": self._client.endpoint,
            "pid": None,
            "state": "failed" if self._last_error else "configured",
            "error": self._last_error,
        }

    def close(self) -> None:
        self._client.close()

    def _embed(self, texts: Sequence[str], kind: EmbedKind, timeout: float | None) -> np.ndarray:
        try:
            # Ollama's native API has no labels; its client ignores them.
            vectors = self._client.embed(texts, input_type=self._labels[kind], timeout=timeout)
        except Exception as exc:
            self._last_error = getattr(exc, "reason", type(exc).__name__)
            raise
        self._last_error = None
        return vectors
