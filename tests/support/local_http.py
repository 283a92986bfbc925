"""A threaded HTTP/1.1 server on 127.0.0.1 for tests that stand in for a real service."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


class LocalHttpServer:
    """Start, stop and `with` for a fake service; subclasses answer in `serve`."""

    _server: ThreadingHTTPServer | None = None
    _url: str = ""

    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """Where it listens (still known after `stop`, for checks made afterwards)."""
        assert self._url, "start the server first"
        return self._url

    def start(self) -> Self:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                owner.serve(self, "GET")

            def do_HEAD(self) -> None:
                owner.serve(self, "HEAD")

            def do_POST(self) -> None:
                owner.serve(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self._url = f"http://{host}:{port}"
        # `stop` waits until the loop next looks at its shutdown flag: every 0.5 s by
        # default, which made every fake service a test stopped cost up to half a second.
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
