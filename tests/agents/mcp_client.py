"""Driving `apus mcp` as an agent does: the SDK's own client over stdio, a real server."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def server_env(*, watch: bool = False, **extra: str) -> dict[str, str]:
    """The test's isolated environment, embeddings off; the watcher off unless `watch`
    (then with a short debounce, so an edit reaches the index soon)."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("APUS_") or name == "APUS_CONFIG"
    }
    env["APUS_MEMORY__SEARCH__PROVIDER"] = "none"
    if watch:
        env["APUS_MEMORY__SEARCH__SYNC__WATCH_DEBOUNCE_MS"] = "200"
    else:
        env["APUS_MEMORY__SEARCH__SYNC__WATCH"] = "false"
    env.update(extra)
    return env


@asynccontextmanager
async def agent(
    vault: Path, env: dict[str, str] | None = None, *args: str
) -> AsyncIterator[ClientSession]:
    """`apus --vault VAULT mcp ARGS` as a subprocess, with an initialised client session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "apus", "--vault", str(vault), "mcp", *args],
        env=env or server_env(),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def text_of(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return "".join(getattr(block, "text", "") for block in result.content)


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result.content
    return result.content[0].text  # type: ignore[union-attr]
