"""The stdio transport of `apus mcp`: the MCP SDK's, behind a filtering stdin reader.

The SDK's `stdio_server` (mcp 2.x) drops what it cannot parse without a reply and, when
stdin closes, ends the session while requests are still being handled, so their replies
are lost. It accepts explicit streams, so this module hands it two of its own:

- stdin: lines are screened (`jsonrpc_guard.screen`) first; a malformed one is answered
  here with the JSON-RPC error, a well-formed one is passed on; at EOF the stream ends only
  once every request passed on has its reply written (or `DRAIN_S` passed);
- stdout: every line is written whole under one lock (the SDK's replies and this module's
  errors share the pipe), and replies are ticked off the pending requests.

With explicit streams the SDK skips its own claim of fds 0 and 1, so that is done here the
same way: the wire moves to private duplicates and fd 0 / fd 1 point at /dev/null and
stderr, so a child process (the embedding server) never reads the requests or writes
into the protocol.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

import anyio
from mcp.server.stdio import stdio_server

from apus.agents.jsonrpc_guard import Forward, Reply, reply_id, screen

# At EOF, wait at most this long for the replies still owed (a search can take seconds).
DRAIN_S = 120.0


class _Wire:
    """The protocol's stdout: whole lines only, and a record of which requests are answered."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._lock = anyio.Lock()
        self.pending: set[str | int] = set()
        self.answered = anyio.Event()  # set whenever `pending` empties

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        async with self._lock:
            await anyio.to_thread.run_sync(self._write_all, data)
        answered = reply_id(text)
        if answered is not None:
            self.settle(answered)

    def settle(self, request_id: str | int) -> None:
        """No reply is owed for `request_id` any more (written, or the request cancelled)."""
        self.pending.discard(request_id)
        if not self.pending:
            self.answered.set()

    def _write_all(self, data: bytes) -> None:
        self._out.write(data)
        self._out.flush()

    async def flush(self) -> None:
        return None  # every write is flushed whole

    def owe(self, request_id: str | int) -> None:
        self.pending.add(request_id)
        self.answered = anyio.Event()


class _ScreenedInput:
    """The protocol's stdin, as the SDK iterates it: screened lines, then EOF once drained."""

    def __init__(self, source: BinaryIO, wire: _Wire) -> None:
        self._source = source
        self._wire = wire

    def __aiter__(self) -> _ScreenedInput:
        return self

    async def __anext__(self) -> str:
        while True:
            raw = await anyio.to_thread.run_sync(self._source.readline, abandon_on_cancel=True)
            if not raw:
                await self._drain()
                raise StopAsyncIteration
            verdict = screen(raw.decode("utf-8", errors="replace"))
            if isinstance(verdict, Reply):
                await self._wire.write(verdict.line())
            elif isinstance(verdict, Forward):
                if verdict.request_id is not None:
                    self._wire.owe(verdict.request_id)
                if verdict.cancels is not None:
                    self._wire.settle(verdict.cancels)  # a cancelled request gets no reply
                return verdict.line

    async def _drain(self) -> None:
        with anyio.move_on_after(DRAIN_S):
            while self._wire.pending:
                await self._wire.answered.wait()


@asynccontextmanager
async def _claimed_stdio() -> AsyncIterator[tuple[BinaryIO, BinaryIO]]:
    """The wire on private fds; fd 0 reads /dev/null and fd 1 writes to stderr meanwhile."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    source = os.fdopen(wire_in, "rb", closefd=False)
    out = os.fdopen(wire_out, "wb", closefd=False)
    try:
        yield source, out
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        # Not closed: a reader thread may still block on the descriptor (as in the SDK).


async def run_stdio(server: Any) -> None:
    """Serve `server` (an MCPServer) over stdin/stdout through the screened streams."""
    async with _claimed_stdio() as (source, out):
        wire = _Wire(out)
        streams: tuple[Any, Any] = (_ScreenedInput(source, wire), wire)
        async with stdio_server(stdin=streams[0], stdout=streams[1]) as (read, write):
            # MCPServer.run_stdio_async does exactly this with the SDK's own streams; its
            # low-level server has no public accessor in mcp 2.x.
            lowlevel = server._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())
