"""`apus mcp`'s stdio transport fed raw lines, as a broken or hostile client writes them:
every malformed line gets its JSON-RPC error, and a request in flight at EOF its reply."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.test_mcp_server import server_env
from apus.agents.jsonrpc_guard import MAX_DEPTH, Reply, nesting_depth, screen
from support.vaults import index_vault, write_note

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def _talk(vault: Path, lines: list[bytes]) -> list[dict[str, Any]]:
    """Write every line, close stdin, and read what the server answered until it exits."""
    process = subprocess.Popen(
        [sys.executable, "-m", "apus", "--vault", str(vault), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(APUS_MEMORY__SEARCH__SYNC__WATCH="false"),
    )
    stdout, stderr = process.communicate(b"".join(lines), timeout=120)
    assert process.returncode == 0, stderr.decode(errors="replace")
    return [json.loads(line) for line in stdout.decode().splitlines() if line.strip()]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "notes/router.md", "# Router\n\nThe router lives in the hallway closet.\n")
    index_vault(root, server_env())
    return root


def test_malformed_lines_get_the_errors_the_spec_names(vault: Path) -> None:
    deep = ("[" * 100_000 + "]" * 100_000 + "\n").encode()
    replies = _talk(
        vault,
        [
            b"this is not json\n",
            b"{}\n",
            b"[]\n",
            b'{"jsonrpc": "2.0", "id": 7, "method": 12}\n',
            deep,
            b'{"jsonrpc": "2.0", "id": 8, "method": "x", "params": ' + b"[" * 100_000 + b"\n",
            _line(INITIALIZE),
        ],
    )
    errors = [reply for reply in replies if "error" in reply]
    assert [reply["error"]["code"] for reply in errors] == [
        -32700,
        -32600,
        -32600,
        -32600,
        -32600,
        -32600,
    ]
    assert [reply["id"] for reply in errors] == [None, None, None, 7, None, None]
    assert "nested deeper" in errors[4]["error"]["message"]
    # The server still serves after all that.
    assert replies[-1]["id"] == 1 and replies[-1]["result"]["serverInfo"]["name"] == "apus"


def test_a_request_in_flight_at_eof_gets_its_reply(vault: Path) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": "hallway closet"}},
    }
    status = {
        "jsonrpc": "2.0",
        "id": "last",
        "method": "tools/call",
        "params": {"name": "memory_status", "arguments": {}},
    }
    # Everything at once, then EOF: the replies are still being made when stdin closes.
    replies = _talk(vault, [_line(INITIALIZE), _line(INITIALIZED), _line(call), _line(status)])
    by_id = {reply["id"]: reply for reply in replies}
    assert set(by_id) == {1, 2, "last"}
    hits = by_id[2]["result"]["structuredContent"]["results"]
    assert [hit["path"] for hit in hits] == ["notes/router.md"]
    assert by_id["last"]["result"]["structuredContent"]["files"] == 1


def test_nesting_is_counted_without_recursion_and_strings_do_not_count() -> None:
    assert nesting_depth('{"a": [1, {"b": "[[[[{{{{"}]}') == 3
    assert nesting_depth("[" * 1_000_000) == MAX_DEPTH + 1  # stops counting past the bound
    assert screen("   \n") is None


def test_a_cancelled_request_is_no_longer_owed_a_reply() -> None:
    cancel = screen(
        '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}'
    )
    assert cancel is not None and not isinstance(cancel, Reply)
    assert cancel.cancels == 5 and cancel.request_id is None
