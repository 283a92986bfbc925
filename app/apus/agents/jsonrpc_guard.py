"""What `apus mcp` does with one line read from stdin, before the MCP SDK sees it.

The SDK's stdio transport (mcp 2.x, `mcp.server.stdio`) hands a line it cannot validate to
the session as an exception, which answers nothing: invalid JSON, `{}` and a request nested
100k brackets deep (parsed recursively, never answered) leave the client waiting forever.
JSON-RPC 2.0 says such lines get an error reply: -32700 (parse error) for text that is not
JSON, -32600 (invalid request) for JSON that is not a request. This module decides that;
`apus.agents.stdio` writes the reply or passes the line on. A line is checked with the parser
the SDK itself uses (pydantic's), not only Python's: `json.loads` takes a lone surrogate
(`"\\ud800"`) that pydantic refuses, and such a request went unanswered.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import mcp_types
from pydantic import ValidationError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# Deeper than any request of these tools (their arguments are flat); the bound is checked
# by a linear scan before any recursive parser runs on the line.
MAX_DEPTH = 64

# A JSON string (skipped whole, so brackets inside it do not count) or one bracket.
_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


@dataclass(frozen=True)
class Forward:
    """A well-formed JSON-RPC message: the SDK handles it."""

    line: str
    request_id: str | int | None  # set for a request (a reply is owed), else None
    # The request a `notifications/cancelled` withdraws: no reply is owed for it any more.
    cancels: str | int | None = None


@dataclass(frozen=True)
class Reply:
    """A malformed line: answered here with this error object."""

    message: dict[str, Any]

    def line(self) -> str:
        return json.dumps(self.message, separators=(",", ":")) + "\n"


def _error(code: int, message: str, request_id: object = None) -> Reply:
    usable = (
        request_id
        if isinstance(request_id, str | int) and not isinstance(request_id, bool)
        else None
    )
    return Reply({"jsonrpc": "2.0", "id": usable, "error": {"code": code, "message": message}})


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """How deep `text`'s arrays and objects nest, counted up to `limit` + 1 (then it stops:
    a 100k-deep line costs one regex pass, no recursion)."""
    depth = deepest = 0
    for match in _STRUCTURE.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def screen(line: str) -> Forward | Reply | None:
    """What to do with one stdin line: pass it on, answer it, or (blank) ignore it."""
    if not line.strip():
        return None
    if nesting_depth(line) > MAX_DEPTH:
        return _error(
            INVALID_REQUEST,
            f"Invalid Request: nested deeper than {MAX_DEPTH} levels; send flat arguments",
        )
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return _error(
            PARSE_ERROR, f"Parse error: not JSON ({exc}); send one JSON-RPC message per line"
        )
    if isinstance(data, list):
        return _error(
            INVALID_REQUEST,
            "Invalid Request: batches are not part of MCP; send one message per line",
        )
    if not isinstance(data, dict):
        return _error(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    request_id = data.get("id")
    if data.get("jsonrpc") != "2.0":
        return _error(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', request_id)
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":  # JSON to Python, not to the SDK: a lone surrogate
            return _error(
                PARSE_ERROR,
                f"Parse error: {first['msg']}; send text as valid UTF-8 (no lone surrogates)",
                request_id,
            )
        return _error(
            INVALID_REQUEST,
            f"Invalid Request: not a JSON-RPC request, notification or response ({first['msg']})",
            request_id,
        )
    is_request = "method" in data and "id" in data
    cancels = None
    if data.get("method") == "notifications/cancelled" and isinstance(data.get("params"), dict):
        withdrawn = data["params"].get("requestId")
        cancels = withdrawn if isinstance(withdrawn, str | int) else None
    return Forward(line, request_id if is_request else None, cancels)


def reply_id(line: str) -> str | int | None:
    """The id a line the server writes answers (a response or an error), else None."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if isinstance(data, dict) and "method" not in data and ("result" in data or "error" in data):
        request_id = data.get("id")
        return request_id if isinstance(request_id, str | int) else None
    return None
