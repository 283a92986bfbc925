"""Codex's rollout lines into a `Reading`.

Each line is `{timestamp, type, payload}`: `session_meta` first (the session's id, start,
working folder, and the session it was forked or spawned from), then `response_item`s (the
model's history: `message`s of role `user`, `assistant` or `developer`, `reasoning`, tool calls
and their outputs) among `event_msg`, `turn_context`, `compacted` and other records. Files
written before that envelope hold a bare first line `{id, timestamp}` and bare items.

A conversation is its `message` items, in file order (a rollout has no tree): the user's and
the assistant's, without what Codex itself puts in a user message (`<environment_context>`,
`AGENTS.md` instructions, `<turn_aborted>`, … : one tagged block, as Codex tells them apart),
developer instructions or reasoning. Events repeat the messages for display (`user_message`,
`agent_message`) and are not read twice. `thread_rolled_back` removes the last user turns from
the branch; the assistant message a compaction wrote as its summary is not conversation either.
"""

from __future__ import annotations

import re
from typing import Any

from apus.vault.transcripts import (
    TOOL_ROLE,
    Header,
    Message,
    Reading,
    join_texts,
    normalise_timestamp,
    tool_call_text,
    tool_result_text,
)

# The record types of a rollout (0.171): anything else is counted as unknown.
KNOWN_TYPES = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "world_state",
        "token_usage_record",
        "inter_agent_communication",
        "security_risk_score",
        "realtime_item",
        "id_allocation",
    }
)
# Items of the model's history, also the bare lines of files without the envelope.
_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
        "compaction",
        "compaction_summary",
        "ghost_snapshot",
    }
)
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
# What Codex adds to a user message: one block wrapped in a tag of its own, or the project's
# AGENTS.md instructions.
_CONTEXT_BLOCK = re.compile(r"\s*<([A-Za-z_][\w-]*)\b[^>]*>.*</\1>\s*", re.S)
_CONTEXT_PREFIXES = ("# AGENTS.md instructions for", "<turn_aborted>")


class CodexLines:
    """Reads one Codex rollout."""

    def __init__(self, agent: str = "codex", *, tool_calls: bool = False) -> None:
        self.agent = agent
        self.tool_calls = tool_calls

    def take(
        self, reading: Reading, event: dict[str, Any] | None, line: int, last_entry: str | None
    ) -> str | None:
        if event is None:
            reading.skipped.malformed += 1
            return last_entry
        timestamp = normalise_timestamp(event.get("timestamp"))
        if timestamp:
            reading.last_timestamp = max(reading.last_timestamp, timestamp)
        kind = event.get("type")
        if "payload" not in event:  # a file from before the envelope
            return self._bare(reading, event, line, last_entry, timestamp)
        payload = event.get("payload")
        if not isinstance(kind, str) or not isinstance(payload, dict):
            reading.skipped.malformed += 1
            return last_entry
        if kind == "session_meta":
            if reading.header is None:
                reading.header = self._header(payload, timestamp)
        elif kind == "response_item":
            return self._item(reading, payload, line, last_entry, timestamp)
        elif kind == "event_msg" and payload.get("type") == "thread_rolled_back":
            return _roll_back(reading, payload.get("num_turns"), last_entry)
        elif kind == "compacted":
            return _drop_summary(reading, payload.get("message"), last_entry)
        elif kind not in KNOWN_TYPES:
            reading.skipped.unknown += 1
        return last_entry

    def _bare(
        self,
        reading: Reading,
        event: dict[str, Any],
        line: int,
        last_entry: str | None,
        timestamp: str,
    ) -> str | None:
        kind = event.get("type")
        if kind in _ITEM_TYPES:
            return self._item(reading, event, line, last_entry, timestamp)
        if kind is None and isinstance(event.get("id"), str) and reading.header is None:
            reading.header = self._header(event, timestamp)
        elif kind is None and event.get("record_type") == "state":
            pass  # the older format's resume state
        else:
            reading.skipped.unknown += 1
        return last_entry

    def _header(self, meta: dict[str, Any], timestamp: str) -> Header:
        session = meta.get("id")
        cwd = meta.get("cwd")
        parent = _parent_id(meta)
        return Header(
            session_id=session if isinstance(session, str) else "",
            timestamp=normalise_timestamp(meta.get("timestamp")) or timestamp,
            cwd=cwd if isinstance(cwd, str) else "",
            parent_key=f"{self.agent}/{parent}" if parent else None,
        )

    def _item(
        self,
        reading: Reading,
        item: dict[str, Any],
        line: int,
        last_entry: str | None,
        timestamp: str,
    ) -> str | None:
        role, text = self._said(item)
        if not text:
            return last_entry
        entry_id = f"line:{line}"
        reading.parents[entry_id] = last_entry
        reading.order.append(entry_id)
        reading.last_message = entry_id
        reading.add_message(Message(entry_id, line, timestamp, role, text))
        return entry_id

    def _said(self, item: dict[str, Any]) -> tuple[str, str]:
        """The item's role as indexed and its text ("" when it is not conversation)."""
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            parts = _content(item.get("content"))
            if role == "user":
                return "user", join_texts(p for p in parts if not _from_codex(p))
            return ("assistant", join_texts(parts)) if role == "assistant" else ("", "")
        if not self.tool_calls:
            return "", ""
        if kind in _CALLS:
            return TOOL_ROLE, _call_text(item)
        if kind in _OUTPUTS:
            return TOOL_ROLE, _output_text(item.get("output"))
        return "", ""


def _content(content: object) -> list[str]:
    """The texts of a message's parts (`input_text`, `output_text`; images have none)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        part["text"]
        for part in content
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]


def _from_codex(text: str) -> bool:
    return text.lstrip().startswith(_CONTEXT_PREFIXES) or bool(_CONTEXT_BLOCK.fullmatch(text))


def _call_text(item: dict[str, Any]) -> str:
    if item.get("type") == "local_shell_call":
        action = item.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        words = command if isinstance(command, list) else []
        return tool_call_text("shell", " ".join(str(word) for word in words))
    if item.get("type") == "web_search_call":
        action = item.get("action")
        return tool_call_text("web_search", action.get("query") if isinstance(action, dict) else "")
    arguments = item.get("arguments", item.get("input"))
    return tool_call_text(item.get("name"), arguments)


def _output_text(output: object) -> str:
    """A tool output: a string, parts with text, or `{content}`."""
    if isinstance(output, dict):
        output = output.get("content")
    return tool_result_text(output)


def _parent_id(meta: dict[str, Any]) -> str | None:
    """The session this one was forked from or spawned by."""
    for key in ("forked_from_id", "parent_thread_id"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    source = meta.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    return parent if isinstance(parent, str) and parent else None


def _roll_back(reading: Reading, turns: object, tip: str | None) -> str | None:
    """Take the last `turns` user turns off the branch ending at `tip`; returns its new end."""
    if not isinstance(turns, int) or isinstance(turns, bool) or turns <= 0:
        return tip
    current = tip
    while current is not None:
        if current not in reading.parents:
            reading.reaches_back = True  # turns of an earlier read: read from the start
            return tip
        message = reading.messages.get(current)
        current = reading.parents[current]
        if message is not None and message.role == "user":
            turns -= 1
            if turns == 0:
                break
    reading.move_tip(current)
    return current


def _drop_summary(reading: Reading, summary: object, tip: str | None) -> str | None:
    """A compaction's summary, when it was written as the last assistant message (`tip`, the
    branch's end), leaves the branch (its text is in the `compacted` record)."""
    if tip is None or not isinstance(summary, str):
        return tip
    if tip not in reading.parents:
        reading.reaches_back = True  # read by an earlier read: read from the start
        return tip
    message = reading.messages.get(tip)
    if message is None or message.role != "assistant" or message.text not in summary:
        return tip
    parent = reading.parents[tip]
    reading.move_tip(parent)
    return parent
