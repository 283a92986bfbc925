"""Hostile and careless requests, as an agent sends them: through the SDK's client, and as raw
stdio lines. Every request gets a reply, every failed call is one sentence then `Fix:` (never
the SDK's bare `Error executing tool`), and a refused call writes nothing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.mcp_client import agent, call, refused, server_env
from agents.test_mcp_transport import INITIALIZE, INITIALIZED
from apus.index.note_filter import MAX_FILTER_VALUES
from support.vaults import index_vault, run_apus, vault_digest, write_note

TODAY = "2026-12-02"
# One sentence (no line break), then the fix, itself ending a sentence.
ONE_FORM = re.compile(r"\A[^\n]+[.!?)] Fix: [^\n]+[.!?)]\Z")


def writable_env(**extra: str) -> dict[str, str]:
    return server_env(APUS_TODAY=TODAY, APUS_MEMORY__WRITE__ENABLED="true", **extra)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "MEMORY.md", "# Memory\n\nThe gateway firmware is pinned to 4.2.\n")
    write_note(root, "notes/router.md", "---\ntags: [home]\n---\n# Router\n\nIn the closet.\n")
    index_vault(root, server_env())
    return root


HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    ("memory_write", {"text": "a NUL \x00 here"}, "binary file"),
    ("memory_write", {"text": "an escape \x1b[2J here"}, "control character (U+001B)"),
    ("memory_write", {"text": "x", "triggers": ["bell \x07"]}, "trigger holds a control"),
    ("memory_write", {"text": "x", "importance": "high"}, "must be a whole number"),
    ("memory_write", {"text": "x", "importance": True}, "not true"),
    ("memory_write", {"text": "x", "target": "../notes/router.md"}, "`target`"),
    ("memory_search", {"query": "x", "tags": [f"t{n}" for n in range(10_000)]}, "at most 250"),
    ("memory_search", {"query": "x", "paths": [f"p{n}/" for n in range(10_000)]}, "at most 250"),
    ("memory_search", {"query": "x", "maxResults": True}, "not true"),
    ("memory_search", {"query": "x", "corpus": "sessions"}, "sessionMemory"),
    ("memory_search", {"query": "x", "since": "9999999 days ago"}, "out of range"),
    ("memory_search", {"query": "x", "since": "soonish"}, "names no date"),
    ("memory_get", {"path": "MEMORY.md#L" + "9" * 5000}, "9 digits"),
    ("memory_get", {"path": "MEMORY.md#L" + "9" * 5000 + "-L1"}, "9 digits"),
    ("memory_get", {"path": "../../etc/passwd"}, "Markdown note"),
    ("memory_related", {"path": "nowhere.md"}, "not an indexed note"),
    ("sessions_search", {"query": "router"}, "not indexed"),
    ("memory_status", {"extra": 1}, "without arguments"),
    ("no_such_tool", {}, "There is no tool named 'no_such_tool'"),
]


async def test_every_hostile_call_is_refused_in_one_form_and_writes_nothing(vault: Path) -> None:
    before = vault_digest(vault)
    async with agent(vault, writable_env()) as session:
        for tool, arguments, says in HOSTILE:
            text = await refused(session, tool, **arguments)
            assert says in text, (tool, text[:300])
            assert ONE_FORM.match(text), text[:300]
            assert "Error executing tool" not in text and "Traceback" not in text
            assert text.count("Fix:") == 1, text[:300]
        # At the limit a search is made (and the server still answers after all that).
        tags = [f"t{n}" for n in range(MAX_FILTER_VALUES - 1)] + ["home"]
        paths = [f"p{n}/" for n in range(MAX_FILTER_VALUES - 1)] + ["notes/"]
        found = await call(session, "memory_search", query="closet", tags=tags, paths=paths)
        assert found["results"] == []  # every tag must be present: admitted, none matches
        found = await call(session, "memory_search", query="closet", tags=["home"], paths=paths)
        assert [hit["path"] for hit in found["results"]] == ["notes/router.md"]
    assert vault_digest(vault) == before


def test_cli_refuses_the_same_in_its_own_form(vault: Path) -> None:
    env = writable_env()
    digits = "9" * 5000
    cases = [
        (("memory", "get", f"MEMORY.md#L{digits}"), "9 digits"),
        (("memory", "search", "x", *[f"--tag=t{n}" for n in range(300)]), "at most 250"),
        (("memory", "search", "x", "--corpus", "sessions"), "not indexed"),
        (("memory", "add", "a NUL \x01 here"), "control character"),
    ]
    for args, says in cases:
        result = run_apus("--vault", vault, *args, env=env, expect=1)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 2 and lines[1].startswith("Fix: "), result.stderr
        assert lines[0].startswith("Error: ") and says in lines[0], result.stderr


def test_cli_text_that_is_not_utf8_is_refused_as_a_folder_name_is(vault: Path) -> None:
    """Bytes that are not UTF-8 arrive as lone surrogates; every text argument is refused
    with the bytes shown, as `--vault` refuses such a folder name (not a traceback)."""
    env = writable_env()
    raw = "\udcff\udcfe gateway"  # what Python makes of the bytes ff fe in an argument
    argv = [
        ("memory", "search", raw),
        ("memory", "search", "gateway", "--tag", raw),
        ("memory", "search", "gateway", "--path", raw),
        ("memory", "get", raw),
        ("memory", "recall", raw),
        ("memory", "add", raw),
        ("sessions", "search", raw),
    ]
    for args in argv:
        command = [sys.executable, "-m", "apus", "--vault", str(vault), *args]
        encoded = [part.encode("utf-8", "surrogateescape") for part in command]
        result = subprocess.run(encoded, env=env, capture_output=True, check=False)
        stderr = result.stderr.decode("utf-8")
        assert result.returncode == 1, (args, stderr)
        assert "Traceback" not in stderr
        assert "\\xff\\xfe gateway" in stderr and "not UTF-8" in stderr, stderr
        assert stderr.strip().splitlines()[-1].startswith("Fix: ")


def _raw_call(request_id: int, tool: str, arguments: str) -> bytes:
    """A tools/call line with `arguments` written as raw JSON text (escapes kept as sent)."""
    params = f'{{"name": "{tool}", "arguments": {arguments}}}'
    line = f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}'
    return (line + "\n").encode()


def test_lone_surrogates_on_the_wire_get_the_parse_error_and_the_server_exits(
    vault: Path,
) -> None:
    """`"\\ud800"` is JSON Python reads but the SDK's parser refuses: such a request went
    unanswered and kept the server from exiting. It gets -32700 with its id; the rest is
    served; at EOF the server exits (`communicate` returns)."""
    lines = [
        (json.dumps(INITIALIZE) + "\n").encode(),
        (json.dumps(INITIALIZED) + "\n").encode(),
        _raw_call(2, "memory_write", '{"text": "lone \\ud800 surrogate"}'),
        _raw_call(3, "memory_write", '{"text": "x", "triggers": ["\\udfff"]}'),
        _raw_call(4, "memory_search", '{"query": "gateway \\ud83d"}'),
        _raw_call(5, "memory_search", '{"query": "gateway \\ud83d\\ude00"}'),  # a real pair
        _raw_call(6, "memory_search", '{"query": "firmware"}'),
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "apus", "--vault", str(vault), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=writable_env(),
    )
    stdout, stderr = process.communicate(b"".join(lines), timeout=300)
    assert process.returncode == 0, stderr.decode(errors="replace")
    replies = {reply["id"]: reply for reply in map(json.loads, stdout.decode().splitlines())}
    assert set(replies) == {1, 2, 3, 4, 5, 6}  # every request answered
    for request_id in (2, 3, 4):
        error = replies[request_id]["error"]
        assert error["code"] == -32700 and "surrogate" in error["message"], error
    assert "result" in replies[5] and "result" in replies[6]
    hits = replies[6]["result"]["structuredContent"]["results"]
    assert [hit["path"] for hit in hits] == ["MEMORY.md"]
    assert not (vault / "memory").exists()  # nothing was written
