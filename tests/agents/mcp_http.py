"""Driving `apus mcp --http` as agents do: a real server process on 127.0.0.1 and the SDK's
Streamable HTTP client (`streamable_http_client`)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agents.mcp_client import server_env

# Only a guard against a hang: the server says when it serves.
START_PATIENCE_S = 120.0
_READY = re.compile(r"Apus memory over MCP at (http://\S+)")


class HttpServer:
    """`apus --vault VAULT mcp --http --port 0 ARGS`, started; its URL once it serves, and
    everything it wrote to stderr (read as it comes, so the pipe never fills)."""

    def __init__(self, vault: Path, env: dict[str, str] | None, args: tuple[str, ...]) -> None:
        command = [sys.executable, "-m", "apus", "--vault", str(vault), "mcp", "--http"]
        if "--port" not in args:
            command += ["--port", "0"]
        self.process = subprocess.Popen(
            [*command, *args],
            env=env or server_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._url: str | None = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            found = _READY.search(line)
            if found:
                self._url = found.group(1)
                self._ready.set()
        self._ready.set()  # ended: `url` says whether it ever served

    @property
    def url(self) -> str:
        assert self._ready.wait(START_PATIENCE_S), "the server did not start"
        assert self._url is not None, f"the server ended without serving:\n{self.stderr}"
        return self._url

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def stop(self, timeout: float = 150) -> int:
        """SIGTERM, then the exit status (a clean stop is 0)."""
        if self.process.poll() is None:
            self.process.terminate()
        return self.exit_status(timeout)

    def exit_status(self, timeout: float = 150) -> int:
        """The exit status once the server ends by itself (a SIGTERM already sent: a second
        one, as a person's second Ctrl-C, ends it at once instead of cleanly)."""
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return code


@contextmanager
def http_server(vault: Path, env: dict[str, str] | None = None, *args: str) -> Iterator[HttpServer]:
    server = HttpServer(vault, env, args)
    try:
        server.url  # noqa: B018  (waits until it serves)
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
        server.process.wait(timeout=60)


@asynccontextmanager
async def http_agent(
    url: str, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised client session over Streamable HTTP (with `headers` on each request)."""
    client = create_mcp_http_client(headers=headers)
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def raw(
    url: str, *, method: str = "POST", headers: dict[str, str] | None = None, body: bytes = b"{}"
) -> httpx2.Response:
    """One plain HTTP request, as a prober (or a browser page) would send it."""
    sent = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    sent.update(headers or {})
    with httpx2.Client(timeout=60) as client:
        return client.request(method, url, headers=sent, content=body)
