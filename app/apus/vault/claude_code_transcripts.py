"""Claude Code's transcript lines into a `Reading`.

Every line is an object with a `type`. `user` and `assistant` lines carry a `message`
(`{role, content}`: a string, or parts of type `text`, `thinking`, `tool_use`, `tool_result`,
`image`; one line per part of a streamed reply) and, like `system`, `attachment` and
`progress` lines, a `uuid` and a `parentUuid`: the tree the active branch is read from. A
compaction starts a new root (`system`/`compact_boundary`) whose `logicalParentUuid` names the
message before it, so the conversation before a compaction stays on the branch; the summary
that follows it (`isCompactSummary`) is not conversation. Nor are lines Claude Code adds for the
model (`isMeta`: skill texts, reminders), API errors, command output and notifications
(`<local-command-stdout>`, `<task-notification>`, …); a slash command is kept as `/name args`.
Subagents have files of their own whose lines are `isSidechain`; older versions also wrote
them inline in the session's file, where they are left out. Every other line type is
metadata (titles, modes, snapshots, queue operations).
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

# The line types Claude Code writes (2.1): anything else is counted as unknown.
KNOWN_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "attachment",
        "progress",
        "summary",
        "custom-title",
        "ai-title",
        "ended-by-model",
        "last-prompt",
        "tag",
        "relocated",
        "agent-name",
        "agent-color",
        "agent-setting",
        "pr-link",
        "frame-link",
        "bridge-session",
        "file-history-snapshot",
        "attribution-snapshot",
        "speculation-accept",
        "mode",
        "permission-mode",
        "isolation-latch",
        "worktree-state",
        "queue-operation",
        "marble-origami-commit",
        "marble-origami-snapshot",
        "marble-origami-reset",
        "content-replacement",
        "fork-context-ref",
    }
)
# Lines that are in the conversation's tree but were not said by anyone in it.
_NOT_SAID = ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly", "isApiErrorMessage")
# Text Claude Code puts in a user turn itself: a tag of its own first (command output, task
# notifications, reminders), or the note that the user interrupted (its own test for "not a
# prompt" is the same).
_INJECTED = re.compile(r"\s*<[a-z][\w-]*[\s>]|\[Request interrupted by user")
_COMMAND = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>\s*(.*?)\s*</command-args>", re.S)


class ClaudeCodeLines:
    """Reads one Claude Code transcript: a session's (`subagent` False) or a subagent's."""

    def __init__(self, agent: str, *, subagent: bool, tool_calls: bool = False) -> None:
        self.agent = agent  # claude-code:<project>
        self.subagent = subagent
        self.tool_calls = tool_calls

    def take(
        self, reading: Reading, event: dict[str, Any] | None, line: int, last_entry: str | None
    ) -> str | None:
        kind = event.get("type") if event is not None else None
        if event is None or not isinstance(kind, str):
            reading.skipped.malformed += 1
            return last_entry
        if event.get("isSidechain") is True and not self.subagent:
            return last_entry  # a subagent written inline: not this conversation
        if kind not in KNOWN_TYPES:
            reading.skipped.unknown += 1
        timestamp = normalise_timestamp(event.get("timestamp"))
        if reading.header is None and timestamp:
            reading.header = self._header(event, timestamp)
        if timestamp:
            reading.last_timestamp = max(reading.last_timestamp, timestamp)
        leaf = event.get("leafUuid")
        if kind == "last-prompt" and event.get("rewound") is True and isinstance(leaf, str):
            reading.move_tip(leaf)  # the user went back to an earlier message
            return last_entry
        said = kind in ("user", "assistant")
        uuid = event.get("uuid")
        if not isinstance(uuid, str) and not said:
            return last_entry  # metadata outside the tree
        entry_id = uuid if isinstance(uuid, str) else f"line:{line}"
        reading.parents[entry_id] = self._parent(reading, event, last_entry)
        reading.order.append(entry_id)
        if said:
            body = event.get("message")
            if not isinstance(body, dict):
                reading.skipped.malformed += 1
                return entry_id
            reading.last_message = entry_id
            role, text = self._said(event, body, kind)
            if text:
                reading.add_message(Message(entry_id, line, timestamp, role, text))
        return entry_id

    def _header(self, event: dict[str, Any], timestamp: str) -> Header:
        session = event.get("sessionId")
        cwd = event.get("cwd")
        # A subagent's lines carry the id of the session that spawned it.
        parent = f"{self.agent}/{session}" if self.subagent and isinstance(session, str) else None
        return Header(
            session_id=session if isinstance(session, str) else "",
            timestamp=timestamp,
            cwd=cwd if isinstance(cwd, str) else "",
            parent_key=parent,
        )

    @staticmethod
    def _parent(reading: Reading, event: dict[str, Any], last_entry: str | None) -> str | None:
        if not isinstance(event.get("uuid"), str):
            return last_entry
        parent = event.get("parentUuid")
        logical = event.get("logicalParentUuid")
        boundary = event.get("subtype") == "compact_boundary"
        if parent is None and boundary and isinstance(logical, str):
            # Some files lack the line the boundary names: the branch then goes on from the
            # last message before it.
            return logical if logical in reading.parents else reading.last_message or logical
        return parent if isinstance(parent, str) else None

    def _said(self, event: dict[str, Any], body: dict[str, Any], kind: str) -> tuple[str, str]:
        """The line's role as indexed and its text ("" when nothing of it is)."""
        if any(event.get(flag) is True for flag in _NOT_SAID):
            return kind, ""
        content = body.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        speech: list[str] = []
        tools: list[str] = []
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, dict):
                continue
            match part.get("type"):
                case "text":
                    speech.append(_spoken(part.get("text"), kind))
                case "tool_use" | "server_tool_use" if self.tool_calls:
                    tools.append(tool_call_text(part.get("name"), part.get("input")))
                case "tool_result" if self.tool_calls:
                    tools.append(tool_result_text(part.get("content")))
        text = join_texts(speech)
        if not text:
            return TOOL_ROLE, join_texts(tools)
        return kind, join_texts([text, *tools])


def _spoken(text: object, kind: str) -> str:
    """A text part as said: a slash command as `/name args`; "" for what Claude Code itself
    put in a user turn."""
    if not isinstance(text, str):
        return ""
    if kind != "user":
        return text
    command = _COMMAND.search(text)
    if command and text.lstrip().startswith(("<command-name>", "<command-message>")):
        args = _COMMAND_ARGS.search(text)
        return f"{command.group(1)} {args.group(1) if args else ''}".strip()
    return "" if _INJECTED.match(text) else text
