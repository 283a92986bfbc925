"""An OpenAI-compatible (and Ollama-native) embeddings server on 127.0.0.1 that records requests.

Vectors are deterministic functions of the input text (not normalised, so clients must
normalise), which lets a test compute the expected answer by hand with `vector_for`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.local_http import LocalHttpServer


def vector_for(text: str, dims: int) -> list[float]:
    """The raw vector the server returns for `text`: bytes of its sha256, scaled, not unit."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [float(digest[i % len(digest)]) - 100.0 for i in range(dims)]


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]


@dataclass
class RecordingServer(LocalHttpServer):
    """Answers POST {prefix}/embeddings and POST /api/embed; `requests` holds every call.

    Switches: `api_key` (answer 401 without the bearer), `fail_status` (answer that status),
    `reverse_order` (list `data` items in reverse, so clients must sort by `index`).
    """

    dims: int = 8
    api_key: str | None = None
    fail_status: int | None = None
    reverse_order: bool = False
    requests: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        if method == "POST":
            self._answer(handler)
        else:
            handler.send_error(405)

    def inputs(self) -> list[str]:
        """Every text received, in request order."""
        with self._lock:
            texts: list[str] = []
            for request in self.requests:
                value = request.body.get("input", [])
                texts.extend([value] if isinstance(value, str) else value)
            return texts

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", "0"))
        body = json.loads(handler.rfile.read(length) or b"{}")
        headers = {name.lower(): value for name, value in handler.headers.items()}
        with self._lock:
            self.requests.append(RecordedRequest(handler.path, headers, body))
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            self._send(handler, 401, {"error": {"message": "Invalid API key"}})
            return
        if self.fail_status is not None:
            self._send(handler, self.fail_status, {"error": {"message": "failing on purpose"}})
            return
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        if handler.path == "/api/embed":
            vectors = [vector_for(text, self.dims) for text in texts]
            self._send(handler, 200, {"model": body.get("model"), "embeddings": vectors})
            return
        if not handler.path.endswith("/embeddings"):
            self._send(handler, 404, {"error": {"message": f"no route {handler.path}"}})
            return
        data = [
            {"object": "embedding", "index": index, "embedding": vector_for(text, self.dims)}
            for index, text in enumerate(texts)
        ]
        if self.reverse_order:
            data.reverse()
        payload = {"object": "list", "data": data, "model": body.get("model"), "usage": {}}
        self._send(handler, 200, payload)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode("utf-8")
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)
