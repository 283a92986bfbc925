"""The `local` Embedder: a GGUF model served by the managed llama.cpp server."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from apus.embed.base import (
    EmbeddingConnectionError,
    EmbeddingIdentity,
    EmbeddingRequestError,
    EmbeddingUnavailable,
    EmbedKind,
)
from apus.embed.local.server_manager import ManagedServer, ServerState
from apus.embed.prefixes import PrefixedTexts, PrefixScheme

if TYPE_CHECKING:  # httpx comes with it: imported when the first request is made
    from apus.embed.http import OpenAIEmbeddingsClient

# A request to our own server waits for the model, never for a network; on a slow CPU a full
# batch can take a while, and a stuck server is caught by the process checks instead.
_REQUEST_TIMEOUT_S = 300.0
# Texts per request; the token budget (batch_tokens) usually binds first.
_MAX_TEXTS_PER_REQUEST = 256


class LocalEmbedder(PrefixedTexts):
    """Embeds through the managed server, starting it on first use and restarting it after a
    crash; one retry covers a server that died between two requests."""

    def __init__(
        self,
        *,
        server: ManagedServer,
        identity: EmbeddingIdentity,
        scheme: PrefixScheme,
        model_file: Path,
        batch_tokens: int,
    ) -> None:
        self._server = server
        self._identity = identity
        self._scheme = scheme
        self._model_file = model_file
        self._batch_tokens = max(1, batch_tokens)
        self._client: OpenAIEmbeddingsClient | None = None
        self._client_instance = ""
        self._lock = threading.Lock()

    @property
    def identity(self) -> EmbeddingIdentity:
        return self._identity

    @property
    def server(self) -> ManagedServer:
        return self._server

    def embed(
        self, texts: Sequence[str], *, kind: EmbedKind, timeout: float | None = None
    ) -> np.ndarray:
        """`kind` selects no labels here: the prefixes already carry the task."""
        if not texts:
            return np.zeros((0, self._identity.dims), dtype=np.float32)
        try:
            vectors = self._client_for(self._server.ensure_running()).embed(texts, timeout=timeout)
        except EmbeddingConnectionError:
            self._server.request_failed()
            state = self._server.ensure_running(verify=True)
            try:
                vectors = self._client_for(state).embed(texts, timeout=timeout)
            except EmbeddingConnectionError as exc:
                # Twice in a row: say what happened to the server, not what the socket saw.
                self._server.request_failed()
                raise self._server.crash_error(exc) from exc
        self._server.mark_healthy()
        if vectors.shape[1] != self._identity.dims:
            raise EmbeddingRequestError(
                f"{self._model_file.name} returned {vectors.shape[1]}-dimensional vectors, "
                f"expected {self._identity.dims}"
            )
        return vectors

    def describe(self) -> dict[str, Any]:
        server = self._server.describe()
        return {
            "provider": self._identity.provider,
            "model": self._identity.model,
            "file": str(self._model_file),
            "dims": self._identity.dims,
            "context": self._server.spec.context,
            "batch_tokens": self._batch_tokens,
            "prefix_scheme": self._identity.prefix_scheme,
            "device": server["device"],
            "gpu_layers": server["gpu_layers"],
            "gpu_offload": server["gpu_offload"],
            "offloaded_layers": server["offloaded_layers"],
            "model_layers": server["model_layers"],
            "endpoint": server["endpoint"],
            "pid": server["pid"],
            "state": server["state"],
            "log": server["log"],
            "error": server["error"],
            "system_info": server["system_info"],
            "crashes": server["crashes"],
            "crashes_seen": server["crashes_seen"],
        }

    def known_failure(self) -> EmbeddingUnavailable | None:
        """The error a request would meet without trying: the server stopped being restarted
        after crashes in a row (counted by any Apus process)."""
        return self._server.gave_up()

    def retry_after_crashes(self) -> None:
        """Forget the crashes in a row, so the next request starts the server again."""
        self._server.forget_crashes()

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
        self._server.close()

    def _client_for(self, state: ServerState) -> OpenAIEmbeddingsClient:
        from apus.embed.http import OpenAIEmbeddingsClient

        with self._lock:
            if self._client is None or self._client_instance != state.instance:
                if self._client is not None:
                    self._client.close()
                self._client = OpenAIEmbeddingsClient(
                    state.base_url,
                    api_key=state.api_key,
                    timeout_s=_REQUEST_TIMEOUT_S,
                    batch_size=_MAX_TEXTS_PER_REQUEST,
                    batch_tokens=self._batch_tokens,
                )
                self._client_instance = state.instance
            return self._client
