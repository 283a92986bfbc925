"""A real HTTP server on 127.0.0.1 that plays one hosted embedding API, for protocol tests.

Subclasses answer like the real service (paths, auth, body checks, error shapes); every
request is recorded as it arrived, and `fail` scripts replies (429 with Retry-After, 500,
malformed JSON) served before the normal answers to requests whose path contains a marker.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.local_http import LocalHttpServer
from support.recording_server import vector_for

__all__ = ["FakeService", "Recorded", "Reply", "vector_for"]


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    raw: bytes

    @property
    def body(self) -> Any:
        return json.loads(self.raw) if self.raw else None


@dataclass
class Reply:
    status: int  # 0: drop the connection without answering
    body: Any = None  # dict/list: JSON; str/bytes: sent as they are
    headers: dict[str, str] = field(default_factory=dict)


class FakeService(LocalHttpServer):
    """Serve `answer(request)`, after any scripted replies that match the request's path."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._scripted: list[tuple[str, Reply]] = []
        self._lock = threading.Lock()

    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        self._serve(handler)

    def answer(self, request: Recorded) -> Reply:
        raise NotImplementedError

    def fail(self, on: str, *replies: Reply) -> None:
        """Answer the next requests whose path contains `on` with `replies`, in order."""
        with self._lock:
            self._scripted.extend((on, reply) for reply in replies)

    def matching(self, marker: str) -> list[Recorded]:
        with self._lock:
            return [request for request in self.requests if marker in request.path]

    def paths(self) -> list[str]:
        with self._lock:
            return [request.path for request in self.requests]

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", "0"))
        raw = handler.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in handler.headers.items()}
        request = Recorded(handler.command, handler.path, headers, raw)
        scripted = None
        with self._lock:
            self.requests.append(request)
            for index, (marker, _reply) in enumerate(self._scripted):
                if marker in request.path:
                    scripted = self._scripted.pop(index)[1]
                    break
        reply = scripted or self.answer(request)
        if reply.status == 0:
            handler.close_connection = True
            return
        send(handler, reply)


def send(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
    if isinstance(reply.body, dict | list):
        raw = json.dumps(reply.body).encode("utf-8")
        content_type = "application/json"
    else:
        raw = reply.body.encode("utf-8") if isinstance(reply.body, str) else (reply.body or b"")
        content_type = "text/plain"
    handler.send_response(reply.status)
    handler.send_header("Content-Type", reply.headers.get("Content-Type", content_type))
    for name, value in reply.headers.items():
        if name != "Content-Type":
            handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(raw)))
    try:
        handler.end_headers()
        handler.wfile.write(raw)
    except (BrokenPipeError, ConnectionResetError):
        # The client gave up first (a test of its timeout or of a stop): the service has
        # nothing to tell it, and a traceback in the suite's output would read as a failure.
        return
