"""Agent session transcripts: reading their JSONL lines from an offset, the active branch,
and chunks by turns.

A transcript is one JSONL file; a `LineReader` for its client's format (this module's
`AgentLines` for `<root>/<agentId>/sessions/<sessionId>.jsonl`, `claude_code_transcripts`
and `codex_transcripts` for those clients' own files) records each line's event in a
`Reading`. Events with an id and a parent form a tree; the active branch is the chain of
parents ending at the last message. Only the text of user and assistant messages on it is
conversation text (tool calls and their results too when `memory.search.sessions.toolCalls`
says so); thinking never is. Pure functions over files: nothing here writes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from apus.config import SearchSettings, Settings
from apus.vault.chunk import Chunk
from apus.vault.text import count_tokens

SUFFIX = ".jsonl"
# Store paths of transcripts start with this: a note path never does (a vault-relative path
# has no scheme), so the two can never collide.
PATH_PREFIX = "sessions:"
# Event types the format defines besides `message`: read for the branch, never indexed, and
# not counted as skipped. Anything else is an unknown event, skipped and counted.
KNOWN_EVENTS = frozenset(
    {
        "session",
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "session_state",
    }
)
INDEXED_ROLES = ("user", "assistant")
# The role of a message that holds only tool calls or results (indexed when asked).
TOOL_ROLE = "tool"
# Bump when transcript chunk boundaries or chunk text change: stored ones are re-made.
TRANSCRIPT_CHUNKING_VERSION = 1
# How much of what was already read is hashed to notice a file rewritten rather than appended.
TAIL_CHECK_BYTES = 4096
# A chunk cut at a turn boundary must be at least this full; see _HEADING_CUT_MIN_FILL in
# apus.vault.chunk (the same reasoning: many short turns must not become many tiny chunks).
_TURN_CUT_MIN_FILL = 0.5
_ROLE_LABELS = {"user": "User", "assistant": "Assistant", TOOL_ROLE: "Tool"}


def enabled(search: SearchSettings) -> bool:
    """Transcripts are indexed and searched only when both switches say so."""
    return search.experimental.session_memory and "sessions" in search.sources


def roots(settings: Settings) -> list[Path]:
    """Every folder transcripts are read from: the configured roots, then the clients' own
    (whether or not they exist)."""
    from apus.vault.transcript_sources import sources

    return [source.root for source in sources(settings)]


def store_path(session_key: str) -> str:
    return PATH_PREFIX + session_key


def session_key_of(path: str) -> str | None:
    """The session key of a transcript's store path; None for a note."""
    return path[len(PATH_PREFIX) :] if path.startswith(PATH_PREFIX) else None


@dataclass(frozen=True)
class TranscriptFile:
    """A transcript found on disk; only stat() was called on it."""

    path: Path
    agent: str
    session: str
    size: int
    mtime_ns: int
    client: str = "paths"  # whose format it is (apus.vault.transcript_sources)

    @property
    def key(self) -> str:
        return f"{self.agent}/{self.session}"


# -- reading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Header:
    """Who the session is and what it was spawned from (from its header line, or the first
    line that says, in formats without one)."""

    session_id: str
    timestamp: str
    cwd: str
    parent_key: str | None  # the parent session's key, when it names one


@dataclass(frozen=True)
class Message:
    """A user or assistant message's text (or, when indexed, a tool call's or result's), and
    where it is in the file."""

    entry_id: str
    line: int  # 1-based line of the file
    timestamp: str  # ISO 8601 in UTC, "" when the event has none
    role: str
    text: str


@dataclass
class LineCounts:
    """Lines skipped while reading, by why."""

    malformed: int = 0  # not a JSON object, or a message without the fields it needs
    unknown: int = 0  # an event type the format does not define
    oversized: int = 0  # longer than memory.search.sessions.maxLineBytes

    @property
    def total(self) -> int:
        return self.malformed + self.unknown + self.oversized

    def add(self, other: LineCounts) -> LineCounts:
        return LineCounts(
            self.malformed + other.malformed,
            self.unknown + other.unknown,
            self.oversized + other.oversized,
        )


@dataclass(frozen=True)
class ReadPosition:
    """Where the previous read stopped, and what an append may continue from."""

    offset: int = 0  # bytes of complete lines read
    lines: int = 0
    last_entry: str | None = None  # the id of the last event with one (for id-less events)
    tip: str | None = None  # the last message event's id
    frontier: tuple[str, ...] = ()  # the tip and events after it that descend from it


@dataclass
class Reading:
    """What one read of a transcript found from its start position."""

    header: Header | None = None
    parents: dict[str, str | None] = field(default_factory=dict)  # event id -> parent id
    messages: dict[str, Message] = field(default_factory=dict)  # indexed messages by id
    order: list[str] = field(default_factory=list)  # event ids in file order
    last_message: str | None = None  # where the active branch ends: the last message event
    last_timestamp: str = ""
    skipped: LineCounts = field(default_factory=LineCounts)
    end: ReadPosition = field(default_factory=ReadPosition)
    # The branch was moved back past where this read started (a rollback): only a read from
    # the start can tell where it ends now.
    reaches_back: bool = False

    def add_message(self, message: Message) -> None:
        """An indexed message, already placed in `parents`."""
        self.messages[message.entry_id] = message

    def move_tip(self, entry: str | None) -> None:
        """End the active branch at `entry` (an earlier event, or None for none at all)."""
        self.last_message = entry
        if entry is not None and entry not in self.parents:
            self.reaches_back = True


class LineReader(Protocol):
    """One client's transcript format: records what each line means in a `Reading`."""

    def take(
        self, reading: Reading, event: dict[str, Any] | None, line: int, last_entry: str | None
    ) -> str | None:
        """Record the event of file line `line` (None: the line is not a JSON object), whose
        parent is `last_entry` when it names none; returns the id of the last event with one."""
        ...


def read_transcript(
    path: Path, lines: LineReader, start: ReadPosition, max_line_bytes: int
) -> Reading:
    """Read complete lines from `start.offset` to the end of the file, each recorded by
    `lines` (the reader of the transcript's format).

    A last line without its newline is taken only when it is already a whole JSON object (a
    half-written one never is); otherwise it waits for the next read.
    """
    reading = Reading()
    offset, line_no, last_entry = start.offset, start.lines, start.last_entry
    with open(path, "rb") as handle:
        handle.seek(offset)
        for raw, size, complete in _lines(handle, max_line_bytes):
            if raw is None:  # longer than the limit
                if not complete:
                    break
                reading.skipped.oversized += 1
            elif raw.strip():
                event = _decode(raw)
                if not complete and event is None:
                    break  # half-written: the writer has not finished this line yet
                last_entry = lines.take(reading, event, line_no + 1, last_entry)
            offset += size
            line_no += 1
    reading.end = ReadPosition(offset, line_no, last_entry)
    return reading


def _lines(handle: BinaryIO, limit: int) -> Iterator[tuple[bytes | None, int, bool]]:
    """(line without its newline, or None when over `limit`; bytes it takes; whether it ends
    with a newline)."""
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or line.endswith(b"\n"):
            yield line.rstrip(b"\r\n"), len(line), line.endswith(b"\n")
            continue
        size = len(line)
        while not line.endswith(b"\n"):  # skip the rest without holding it
            line = handle.readline(1 << 20)
            if not line:
                yield None, size, False
                return
            size += len(line)
        yield None, size, True


def _decode(raw: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


class AgentLines:
    """The format of `<root>/<agentId>/sessions/<sessionId>.jsonl`: a `session` header line,
    then events with `id` and `parentId` (or, in the older linear format, none: each follows
    the one before it); `message` events hold `{role, content}`."""

    def __init__(self, agent: str, *, tool_calls: bool = False) -> None:
        self.agent = agent  # whose session it is: a bare parent session id belongs to it
        self.tool_calls = tool_calls

    def take(
        self, reading: Reading, event: dict[str, Any] | None, line: int, last_entry: str | None
    ) -> str | None:
        if event is None:
            reading.skipped.malformed += 1
            return last_entry
        kind = event.get("type")
        if kind == "session":
            reading.header = _header(event, self.agent)
            if reading.header.timestamp:
                reading.last_timestamp = max(reading.last_timestamp, reading.header.timestamp)
            return last_entry
        if kind not in KNOWN_EVENTS:
            reading.skipped.unknown += 1
            return last_entry
        entry_id = _text(event.get("id")) or f"line:{line}"
        parent = _text(event.get("parentId")) if "parentId" in event else last_entry
        reading.parents[entry_id] = parent
        reading.order.append(entry_id)
        timestamp = normalise_timestamp(event.get("timestamp"))
        if kind == "message":
            body = event.get("message")
            if not isinstance(body, dict) or not isinstance(body.get("role"), str):
                reading.skipped.malformed += 1
                return entry_id
            timestamp = timestamp or normalise_timestamp(body.get("timestamp"))
            reading.last_message = entry_id
            role, text = self._said(body)
            if text:
                reading.add_message(Message(entry_id, line, timestamp, role, text))
        if timestamp:
            reading.last_timestamp = max(reading.last_timestamp, timestamp)
        return entry_id

    def _said(self, body: dict[str, Any]) -> tuple[str, str]:
        """The message's role as indexed and its text ("" when nothing of it is)."""
        role = body["role"]
        if role == "toolResult":
            return TOOL_ROLE, message_text(body) if self.tool_calls else ""
        if role not in INDEXED_ROLES:
            return role, ""
        text = message_text(body)
        if self.tool_calls:
            calls = [
                tool_call_text(part.get("name"), part.get("arguments"))
                for part in _parts(body.get("content"))
                if part.get("type") == "toolCall"
            ]
            text = join_texts([text, *calls])
        return role, text


def _header(event: dict[str, Any], agent: str) -> Header:
    return Header(
        session_id=_text(event.get("id")) or "",
        timestamp=normalise_timestamp(event.get("timestamp")),
        cwd=_text(event.get("cwd")) or "",
        parent_key=parent_key(event.get("parentSession"), agent),
    )


def parent_key(raw: object, agent: str) -> str | None:
    """The session key a header's `parentSession` names: a transcript file path, an
    `agent/session` key, or a bare session id of the same agent."""
    text = _text(raw)
    if not text:
        return None
    if text.endswith(SUFFIX):
        parts = Path(text).parts
        if len(parts) >= 3 and parts[-2] == "sessions":
            return f"{parts[-3]}/{parts[-1][: -len(SUFFIX)]}"
        return f"{agent}/{Path(text).stem}"
    return text if "/" in text else f"{agent}/{text}"


def message_text(body: dict[str, Any]) -> str:
    """The text parts of a message, joined; thinking, tool calls and images are left out."""
    content = body.get("content")
    if isinstance(content, str):
        return content.strip()
    return join_texts(part.get("text") for part in _parts(content) if part.get("type") == "text")


def join_texts(texts: Iterable[object]) -> str:
    """Non-empty texts, stripped, a blank line apart."""
    return "\n\n".join(t.strip() for t in texts if isinstance(t, str) and t.strip())


def tool_call_text(name: object, arguments: object) -> str:
    """A tool call as indexed: its name, then its arguments as written (JSON when they are
    not a string)."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False) if arguments else ""
    return f"{name if isinstance(name, str) else 'tool'} {arguments}".strip()


def tool_result_text(content: object) -> str:
    """A tool result's text: a string, or the text of its parts."""
    if isinstance(content, str):
        return content.strip()
    return join_texts(part.get("text") for part in _parts(content))


def _parts(content: object) -> list[dict[str, Any]]:
    """The parts of a list content (the dicts in it; nothing for anything else)."""
    if not isinstance(content, list):
        return []
    return [part for part in content if isinstance(part, dict)]


def normalise_timestamp(raw: object) -> str:
    """ISO 8601 in UTC with milliseconds (so text order is time order); epoch numbers in
    seconds or milliseconds are accepted; anything else is ""."""
    try:
        if isinstance(raw, bool):
            return ""
        if isinstance(raw, int | float):
            seconds = raw / 1000 if raw > 1e11 else raw
            moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        elif isinstance(raw, str) and raw.strip():
            moment = dt.datetime.fromisoformat(raw.strip())
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
        else:
            return ""
    except (ValueError, OverflowError, OSError):
        return ""
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


# -- the active branch ------------------------------------------------------------------------


def active_branch(reading: Reading) -> list[Message]:
    """The indexed messages on the chain of parents ending at the last message, in order."""
    chain: list[Message] = []
    seen: set[str] = set()
    current = reading.last_message
    while current is not None and current in reading.parents and current not in seen:
        seen.add(current)
        message = reading.messages.get(current)
        if message is not None:
            chain.append(message)
        current = reading.parents[current]
    chain.reverse()
    return chain


def appended_branch(reading: Reading, start: ReadPosition) -> list[Message] | None:
    """The messages an append adds to the active branch read before (`start`), or None when
    the append does not continue it (the conversation went back to an earlier point, a
    branch was switched), so that the whole file must be read again."""
    frontier = set(start.frontier)
    if reading.reaches_back:
        return None
    if reading.last_message is None:
        return []  # no new message: the branch ends where it did
    chain: list[Message] = []
    seen: set[str] = set()
    current: str | None = reading.last_message
    while current is not None and current in reading.parents and current not in seen:
        seen.add(current)
        message = reading.messages.get(current)
        if message is not None:
            chain.append(message)
        current = reading.parents[current]
    if start.tip is not None and current not in frontier:
        return None
    chain.reverse()
    return chain


def frontier_after(reading: Reading, start: ReadPosition) -> tuple[str, ...]:
    """The events an append may continue the active branch from without changing what of it
    is indexed: the branch's last indexed message, and the events after it that descend from
    it through none that is indexed (a tool call and its result when they are not, a model
    change, a label; with parallel tool calls the branch's end is one of several)."""
    anchor, left_at = _last_indexed(reading)
    if anchor is not None:
        found = {anchor}
        events = reading.order[reading.order.index(anchor) + 1 :]
    else:  # nothing indexed on this read's part of the branch: it goes on from before
        found = set(start.frontier) | ({left_at} if left_at is not None else set())
        if not found and reading.last_message is not None:
            found = {reading.last_message}
        events = reading.order
    for entry in events:
        if reading.parents.get(entry) in found and entry not in reading.messages:
            found.add(entry)
    return tuple(sorted(found))


def position_after(reading: Reading, start: ReadPosition) -> ReadPosition:
    """Where the next read of the file goes on from, after `reading` (which began at
    `start`)."""
    return dataclasses.replace(
        reading.end,
        tip=reading.last_message or start.tip,
        frontier=frontier_after(reading, start),
    )


def _last_indexed(reading: Reading) -> tuple[str | None, str | None]:
    """The last indexed message on the active branch within this read (None: there is
    none), and where the walk back left this read (None: at the root)."""
    seen: set[str] = set()
    current = reading.last_message
    while current is not None and current in reading.parents and current not in seen:
        if current in reading.messages:
            return current, None
        seen.add(current)
        current = reading.parents[current]
    return None, current


def tail_check(path: Path, offset: int) -> str:
    """A hash of the last bytes read: differs when the file was rewritten, not appended to."""
    start = max(0, offset - TAIL_CHECK_BYTES)
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            data = handle.read(offset - start)
    except OSError:
        return ""
    return hashlib.sha256(data).hexdigest()


# -- chunks by turns --------------------------------------------------------------------------


def chunk_messages(
    messages: Sequence[Message], max_tokens: int, first_ordinal: int = 0
) -> list[Chunk]:
    """Pack messages into chunks of at most `max_tokens`, cutting between messages and
    preferably where a user turn starts; a message is split only when it alone is too big.
    Line ranges are the file lines of the first and last message; chunks do not overlap."""
    chunks: list[Chunk] = []
    pending: list[tuple[Message, str, int]] = []  # message, its text as chunked, tokens
    used = 0

    def close() -> None:
        nonlocal pending, used
        if pending:
            text = "\n\n".join(part for _m, part, _t in pending)
            first, last = pending[0][0], pending[-1][0]
            ordinal = first_ordinal + len(chunks)
            # The sum of its messages' counts: a text costs at most what its lines cost.
            chunks.append(Chunk(ordinal, text, first.line, last.line, (), used))
        pending, used = [], 0

    for message in messages:
        parts = _message_parts(message, max_tokens)
        for index, (part, tokens) in enumerate(parts):
            turn_starts = message.role == "user" and index == 0
            if pending and (
                used + tokens > max_tokens
                or (turn_starts and used >= max_tokens * _TURN_CUT_MIN_FILL)
            ):
                close()
            pending.append((message, part, tokens))
            used += tokens
        if len(parts) > 1:
            # The last piece of a split message ends its chunk: a chunk that began inside a
            # message then spans that one line, and is never taken for a note chunk that
            # repeats the lines before it (apus.index.keyword.repeated_lines).
            close()
    close()
    return chunks


def _label(message: Message) -> str:
    return f"{_ROLE_LABELS.get(message.role, message.role)}: "


def _message_parts(message: Message, max_tokens: int) -> list[tuple[str, int]]:
    """The message as chunk text ("User: …") and its token count, in pieces when it is too
    big for one chunk."""
    text = _label(message) + message.text
    tokens = count_tokens(text)
    if tokens <= max_tokens:
        return [(text, tokens)]
    parts: list[str] = []
    current: list[str] = []
    used = 0
    for word in _words(text):
        cost = count_tokens(word)
        if current and used + cost > max_tokens:
            parts.append("".join(current).strip())
            current, used = [], 0
        current.append(word)
        used += cost
    if current:
        parts.append("".join(current).strip())
    return [(part, count_tokens(part)) for part in parts if part]


def _words(text: str) -> Iterator[str]:
    """The text as words with their trailing whitespace; a word longer than a chunk (base64,
    a minified line) comes in slices."""
    start = 0
    length = len(text)
    while start < length:
        end = start
        while end < length and not text[end].isspace():
            end += 1
        while end < length and text[end].isspace():
            end += 1
        word = text[start:end]
        for piece in range(0, len(word), 200):
            yield word[piece : piece + 200]
        start = end
