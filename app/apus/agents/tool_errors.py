"""Every failed tool call answered in one form: one sentence saying what is wrong, then `Fix:`.

The SDK (mcp 2.x) words a failed call three ways: `Error executing tool NAME: TEXT` for a
`ToolError` the tool raised, `Error executing tool NAME` alone for anything else (its text
kept on the server), and `Unknown tool: NAME`. An agent then meets two forms for the same kind
of mistake, and no fix for the rest. `AnsweringServer.call_tool` answers every failure itself,
as a `CallToolResult` with `isError`: the tool's own sentence, an `ApusError`'s reason and fix,
or for a crash a sentence that names it (the traceback goes to the log).
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent

from apus.errors import ApusError

log = logging.getLogger(__name__)

FIX_MARK = " Fix: "
CRASH_FIX = "call it again; if it fails the same way, run `apus doctor` and see the log mcp.log"


def one_form(reason: str, fix: str) -> str:
    """`reason` as one sentence, then the fix: `… . Fix: ….`"""
    return f"{_sentence(reason)}{FIX_MARK}{_sentence(fix)}"


def error_result(text: str) -> CallToolResult:
    """A failed call as the agent reads it."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def tool_error_text(tool: str, known: list[str], exc: ToolError) -> str:
    """What the agent reads for a failed call of `tool` (`known`: the tools there are)."""
    cause = exc.__cause__
    if isinstance(cause, ApusError):
        return one_form(cause.reason, cause.fix or CRASH_FIX)
    if isinstance(exc, UnexpectedToolError):
        return one_form(
            f"{tool} failed on an unexpected error in Apus ({type(cause).__name__})",
            CRASH_FIX,
        )
    text = " ".join(str(cause if isinstance(cause, ToolError) else exc).split())
    if text == f"Unknown tool: {tool}":
        names = ", ".join(known)
        return one_form(f"There is no tool named {tool!r}", f"call one of {names}")
    if FIX_MARK.strip() in text:
        return text
    return one_form(text, f"call {tool} again with the arguments its input schema describes")


class AnsweringServer(MCPServer):
    """The MCP server, whose failed tool calls are answered in one form (see the module)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) and not isinstance(exc.__cause__, ApusError):
                log.error("tool %s failed", name, exc_info=exc.__cause__)
            known = [tool.name for tool in await self.list_tools()]
            return error_result(tool_error_text(name, known, exc))


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else text + "."
