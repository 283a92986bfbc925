"""Claude Code's and Codex's transcripts for tests: the fixtures (tests/fixtures/transcripts,
see the README there) copied to where those clients keep them, and lines written as they
write them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from support.transcripts import ON

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"

# Recorded from Claude Code 2.1.197: a tool call, thinking, a message in two parts, a subagent,
# /compact, and a turn after it.
KILN_PROJECT = "-home-ada-kiln"
KILN_AGENT = f"claude-code:{KILN_PROJECT}"
KILN_SESSION = "98dfd853-78c2-4f8b-a8fc-612c3cb26bbd"
KILN_KEY = f"{KILN_AGENT}/{KILN_SESSION}"
KILN_SUBAGENT_KEY = f"{KILN_KEY}/agent-a6c23b916066618fa"
KILN_FILE = f"claude/projects/{KILN_PROJECT}/{KILN_SESSION}.jsonl"
# Recorded from Codex 0.171: a tool call, reasoning, a spawned subagent, and a compaction.
CODEX_KEY = "codex/01a24d01-c08f-7891-aa80-5c4af6a01fe1"
CODEX_SUBAGENT_KEY = "codex/01a24d01-c502-7582-a4e9-3874909249c5"
CODEX_FILE = (
    "codex/sessions/2026/12/06/rollout-2026-12-06T20-18-10-01a24d01-c08f-7891-aa80-5c4af6a01fe1"
    ".jsonl"
)
# Every session key of the fixtures: Claude Code's from their files, Codex's by id.
FIXTURE_KEYS = {
    KILN_KEY,
    KILN_SUBAGENT_KEY,
    "claude-code:-home-marco-projects-spotter/55604662-cf2a-4331-851a-ec234028f8ca",
    "claude-code:-home-marco-projects-spotter/d6e0bada-1959-4eec-a9d2-0bfade768d8f",
    "claude-code:-tmp/dag-compact-after-rewind",
    "claude-code:-workspace-example-app/55550000-0000-4000-8000-000000000001",
    "claude-code:-workspace-example-app/55550000-0000-4000-8000-000000000001/agent-showcol1",
    "claude-code:-workspace-example-app/55550000-0000-4000-8000-000000000001/agent-showcol2",
    CODEX_KEY,
    CODEX_SUBAGENT_KEY,
    "codex/11111111-1111-4111-8111-111111111111",
    "codex/44444444-4444-4444-8444-444444444444",
}


def install() -> tuple[Path, Path]:
    """Copy the fixtures into the folders CLAUDE_CONFIG_DIR and CODEX_HOME name (the test's
    own, from conftest); returns them."""
    claude = Path(os.environ["CLAUDE_CONFIG_DIR"])
    codex = Path(os.environ["CODEX_HOME"])
    shutil.copytree(FIXTURES / "claude", claude, dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "codex", codex, dirs_exist_ok=True)
    return claude, codex


def installed(relative: str) -> Path:
    """Where a fixture file (`claude/…` or `codex/…`) was installed."""
    client, _, rest = relative.partition("/")
    home = os.environ["CLAUDE_CONFIG_DIR" if client == "claude" else "CODEX_HOME"]
    return Path(home) / rest


def sessions_env(**extra: str) -> dict[str, str]:
    """Transcripts on, from the clients' folders only."""
    return {**ON, **extra}


def claude_line(
    uuid: str, parent: str | None, role: str, content: str | list[dict[str, Any]], when: str
) -> str:
    """A user or assistant line as Claude Code writes it, in the kiln session."""
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        message = {"id": f"msg_{uuid}", "type": "message", "model": "m", **message}
    event = {
        "parentUuid": parent,
        "isSidechain": False,
        "type": role,
        "message": message,
        "uuid": uuid,
        "timestamp": when,
        "userType": "external",
        "cwd": "/home/ada/kiln",
        "sessionId": KILN_SESSION,
        "version": "2.1.197",
    }
    return json.dumps(event, separators=(",", ":")) + "\n"


def codex_line(role: str, text: str, when: str) -> str:
    """A message item as Codex writes it."""
    kind = "input_text" if role == "user" else "output_text"
    event = {
        "timestamp": when,
        "type": "response_item",
        "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
    }
    return json.dumps(event, separators=(",", ":")) + "\n"


def codex_event(kind: str, payload: dict[str, Any], when: str) -> str:
    return json.dumps({"timestamp": when, "type": kind, "payload": payload}) + "\n"
