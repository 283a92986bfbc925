"""The Embedder for providers Apus does not run: hosted APIs and servers on the network."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from apus.embed.base import (
    EmbeddingIdentity,
    EmbeddingRequestError,
    EmbeddingUnavailable,
    EmbedKind,
)
from apus.embed.media import MediaSupport, text_only
from apus.embed.prefixes import PrefixedTexts, PrefixScheme

_DIMS_PROBE_TEXT = "dimension probe"


class EmbeddingClient(Protocol):
    """One protocol's client: texts (already prefixed) in, L2-normalised rows out."""

    @property
    def endpoint(self) -> str: ...

    def embed(
        self, texts: Sequence[str], *, kind: EmbedKind = "document", timeout: float | None = None
    ) -> np.ndarray: ...

    def close(self) -> None: ...


@runtime_checkable
class MediaEmbeddingClient(Protocol):
    """A client that also embeds images and audio (one of those whose media_support says so)."""

    def embed_media(self, path: Path, *, timeout: float | None = None) -> np.ndarray: ...


class RemoteEmbedder(PrefixedTexts):
    """Prefixes by model family; the client adds what its protocol wants (input types, task
    types, dimensions). The vector width is known up front (a configured or documented width)
    or learned with one request the first time the identity is asked for, and every answer is
    checked against it."""

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        client: EmbeddingClient,
        scheme: PrefixScheme,
        dims: int | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self._provider = provider
        self._model = model
        self._client = client
        self._scheme = scheme
        self._dims = dims
        self._details = dict(details or {})
        self._lock = threading.Lock()
        self._last_error: str | None = None

    @property
    def client(self) -> EmbeddingClient:
        return self._client

    @property
    def identity(self) -> EmbeddingIdentity:
        with self._lock:
            dims = self._dims
        if dims is None:
            probe = self._embed([self._scheme.apply_query(_DIMS_PROBE_TEXT)], "query", None)
            dims = self._check_width(probe)
        # Remote weights are not ours to hash: the model id stands for them.
        return EmbeddingIdentity(self._provider, self._model, "", self._scheme.label, dims)

    def embed(
        self, texts: Sequence[str], *, kind: EmbedKind, timeout: float | None = None
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.identity.dims), dtype=np.float32)
        vectors = self._embed(texts, kind, timeout)
        self._check_width(vectors)
        return vectors

    def media_support(self) -> MediaSupport:
        """Whether this provider and model embed images and audio (see apus.embed.media)."""
        check = getattr(self._client, "media_support", None)
        return check() if check is not None else text_only(self._provider, self._model)

    def embed_media(self, path: Path, *, timeout: float | None = None) -> np.ndarray:
        """One (1 x dims) document vector for an image or audio file, in the text space.

        Raises MediaSkipped when the file cannot be sent (type, size, length) and an
        EmbeddingError when the provider fails.
        """
        support = self.media_support()
        client = self._client
        if not support.supported or not isinstance(client, MediaEmbeddingClient):
            raise EmbeddingUnavailable(support.reason, fix=support.fix)
        try:
            vectors = client.embed_media(path, timeout=timeout)
        except EmbeddingRequestError as exc:
            self._last_error = exc.reason
            raise
        self._check_width(vectors)
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
            **self._details,
            "pid": None,
            "state": "failed" if self._last_error else "configured",
            "error": self._last_error,
        }

    def close(self) -> None:
        self._client.close()

    def _embed(self, texts: Sequence[str], kind: EmbedKind, timeout: float | None) -> np.ndarray:
        try:
            vectors = self._client.embed(texts, kind=kind, timeout=timeout)
        except Exception as exc:
            self._last_error = getattr(exc, "reason", type(exc).__name__)
            raise
        self._last_error = None
        return vectors

    def _check_width(self, vectors: np.ndarray) -> int:
        width = int(vectors.shape[1])
        with self._lock:
            if self._dims is None:
                self._dims = width
            expected = self._dims
        if width != expected:
            self._last_error = f"vectors of {width} dimensions instead of {expected}"
            raise EmbeddingRequestError(
                f"{self._provider} returned {width}-dimensional vectors for {self._model}, "
                f"expected {expected}",
                fix="check memory.search.model and memory.search.outputDimensionality "
                "(0 keeps the model's own width)",
            )
        return width


class UnavailableEmbedder(PrefixedTexts):
    """An explicitly named provider that could not be set up (no key, no URL, bad entry).

    It resolves like a working provider and fails on first use, so search reports the
    provider unavailable with the reason and the fix instead of quietly going keyword-only.
    """

    def __init__(self, provider: str, error: EmbeddingUnavailable) -> None:
        self._provider = provider
        self._error = error
        self._scheme = PrefixScheme("none", 1, "{query}", "{text}")

    @property
    def identity(self) -> EmbeddingIdentity:
        raise EmbeddingUnavailable(self._error.reason, self._error.fix)

    def embed(
        self, texts: Sequence[str], *, kind: EmbedKind, timeout: float | None = None
    ) -> np.ndarray:
        raise EmbeddingUnavailable(self._error.reason, self._error.fix)

    def media_support(self) -> MediaSupport:
        return MediaSupport(False, self._error.reason, self._error.fix)

    def describe(self) -> dict[str, Any]:
        return {
            "provider": self._provider,
            "device": "remote",
            "state": "failed",
            "error": self._error.reason,
            "fix": self._error.fix,
        }

    def close(self) -> None:
        return None
