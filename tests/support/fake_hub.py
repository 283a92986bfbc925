"""A model hub on 127.0.0.1 serving `/{repo}/resolve/{revision}/{file}` like huggingface.co."""

from __future__ import annotations

import hashlib
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from apus.embed.local.catalog import ModelManifest
from support.local_http import LocalHttpServer

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


@dataclass
class HubRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class FakeHub(LocalHttpServer):
    """Serves registered files with HEAD/GET, ETag, X-Repo-Commit, Content-Length and Range.

    Switches:
    - `cut_after_bytes` + `cuts_left`: the next `cuts_left` GETs announce the full length but
      close the connection after `cut_after_bytes` bytes of body.
    - `corrupt`: serve the file with one byte flipped (same length).
    """

    files: dict[str, bytes] = field(default_factory=dict)
    commits: dict[str, str] = field(default_factory=dict)
    requests: list[HubRequest] = field(default_factory=list)
    cut_after_bytes: int = 0
    cuts_left: int = 0
    corrupt: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        if method == "POST":
            handler.send_error(405)
        else:
            self._serve(handler, head=method == "HEAD")

    def add(self, repo: str, revision: str, filename: str, data: bytes) -> None:
        self.files[f"/{repo}/resolve/{revision}/{filename}"] = data
        self.commits[f"/{repo}/resolve/{revision}/{filename}"] = revision

    def gets(self) -> list[HubRequest]:
        with self._lock:
            return [request for request in self.requests if request.method == "GET"]

    def _serve(self, handler: BaseHTTPRequestHandler, *, head: bool) -> None:
        path = handler.path.split("?", 1)[0]
        with self._lock:
            self.requests.append(
                HubRequest(
                    "HEAD" if head else "GET",
                    path,
                    {name.lower(): value for name, value in handler.headers.items()},
                )
            )
        data = self.files.get(path)
        if data is None:
            handler.send_response(404)
            handler.send_header("Content-Length", "0")
            handler.send_header("X-Error-Code", "EntryNotFound")
            handler.end_headers()
            return
        if self.corrupt:
            data = data[:-1] + bytes([data[-1] ^ 0xFF])
        etag = hashlib.sha256(self.files[path]).hexdigest()
        start, end, status = 0, len(data) - 1, 200
        match = _RANGE.match(handler.headers.get("Range", ""))
        if match:
            start = int(match.group(1))
            end = int(match.group(2)) if match.group(2) else len(data) - 1
            if start >= len(data):
                handler.send_response(416)
                handler.send_header("Content-Range", f"bytes */{len(data)}")
                handler.send_header("Content-Length", "0")
                handler.end_headers()
                return
            status = 206
        body = data[start : end + 1]
        handler.send_response(status)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(len(body)))
        handler.send_header("Accept-Ranges", "bytes")
        handler.send_header("ETag", f'"{etag}"')
        handler.send_header("X-Linked-Etag", f'"{etag}"')
        handler.send_header("X-Linked-Size", str(len(data)))
        handler.send_header("X-Repo-Commit", self.commits[path])
        if status == 206:
            handler.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        handler.end_headers()
        if head:
            return
        cut = False
        with self._lock:
            if self.cuts_left > 0:
                self.cuts_left -= 1
                cut = True
        if cut:
            handler.wfile.write(body[: self.cut_after_bytes])
            handler.wfile.flush()
            handler.connection.shutdown(socket.SHUT_RDWR)
            handler.close_connection = True
            return
        handler.wfile.write(body)


TEST_REPO = "apus-tests/tiny-GGUF"
TEST_REVISION = "0123456789abcdef0123456789abcdef01234567"


def hub_manifest(data: bytes, *, name: str = "tiny-test", family: str = "none") -> ModelManifest:
    """A catalogue entry for `data` served by a FakeHub as TEST_REPO/TEST_REVISION/tiny.gguf."""
    return ModelManifest(
        name=name,
        repo=TEST_REPO,
        file="tiny.gguf",
        revision=TEST_REVISION,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        dims=32,
        context=512,
        family=family,
        description="a tiny test model",
    )
