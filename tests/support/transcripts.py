"""Agent session transcripts for tests: JSONL written event by event, with known answers."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# The environment that turns transcripts on (the roots come with `enabled_env`).
ON = {
    "APUS_MEMORY__SEARCH__EXPERIMENTAL__SESSIONMEMORY": "true",
    "APUS_MEMORY__SEARCH__SOURCES": '["memory", "sessions"]',
}


def enabled_env(root: Path, **extra: str) -> dict[str, str]:
    return {**ON, "APUS_MEMORY__SEARCH__SESSIONS__PATHS": json.dumps([str(root)]), **extra}


def header(session_id: str, timestamp: str, parent: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "session",
        "id": session_id,
        "timestamp": timestamp,
        "cwd": "/home/me/project",
    }
    if parent is not None:
        event["parentSession"] = parent
    return event


def message(
    entry_id: str,
    parent: str | None,
    role: str,
    text: str | None,
    timestamp: str,
    *,
    thinking: str | None = None,
    tool_call: str | None = None,
) -> dict[str, Any]:
    """A message event; `thinking` and `tool_call` add parts that must never be indexed."""
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking})
    if text is not None:
        content.append({"type": "text", "text": text})
    if tool_call is not None:
        content.append(
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"cmd": tool_call}}
        )
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": timestamp,
        "message": {"role": role, "content": content},
    }


def tool_result(entry_id: str, parent: str, text: str, timestamp: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": timestamp,
        "message": {
            "role": "toolResult",
            "toolCallId": "c1",
            "content": [{"type": "text", "text": text}],
        },
    }


def lines(events: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(event) + "\n" for event in events)


def transcript_path(root: Path, key: str) -> Path:
    agent, session = key.split("/")
    return root / agent / "sessions" / f"{session}.jsonl"


def write_transcript(root: Path, key: str, events: Iterable[Mapping[str, Any]]) -> Path:
    path = transcript_path(root, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(lines(events), encoding="utf-8")
    return path


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def conversation(
    key: str,
    exchanges: Iterable[tuple[str, str]],
    *,
    day: str = "2026-11-20",
    parent: str | None = None,
    first: int = 0,
) -> list[dict[str, Any]]:
    """A header and user/assistant pairs, one minute apart, chained by parentId."""
    session = key.split("/")[1]
    events: list[dict[str, Any]] = [] if first else [header(session, f"{day}T09:00:00Z", parent)]
    previous: str | None = f"m{first - 1}" if first else None
    number = first
    for user_text, assistant_text in exchanges:
        for role, text in (("user", user_text), ("assistant", assistant_text)):
            minute = number % 60
            hour = 9 + number // 60
            events.append(
                message(f"m{number}", previous, role, text, f"{day}T{hour:02d}:{minute:02d}:30Z")
            )
            previous = f"m{number}"
            number += 1
    return events
