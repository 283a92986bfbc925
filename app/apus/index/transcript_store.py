"""The transcript store: agent session transcripts in the index database, beside the notes.

A transcript is a `files` row of source 'sessions' (its chunks are searched like a note's),
a `transcripts` row (owner, what it was spawned from, how far it has been read) and its
active-branch messages in `transcript_messages`, with the FTS5 index `transcript_text` kept
by triggers. Deleting the `files` row deletes the rest. `TranscriptStore` works on the
`Store`'s own connection, so its writes join the store's transactions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from apus.index.note_filter import SessionScope
from apus.index.store import NewFile, Store
from apus.vault.chunk import Chunk
from apus.vault.transcripts import LineCounts, Message, ReadPosition


@dataclass(frozen=True)
class TranscriptRecord:
    """What a read of a transcript found out about it, besides its messages."""

    session_key: str
    agent: str
    parent_key: str | None
    location: str  # the JSONL file
    started: str
    last_activity: str
    position: ReadPosition
    tail_check: str
    skipped: LineCounts  # lines skipped in the whole file so far


@dataclass(frozen=True)
class TranscriptTouch:
    """The files-row facts of a transcript: its size and time, title, and the day of its last
    activity (recency decay and date filters)."""

    size: int
    mtime_ns: int
    title: str
    day: str | None


@dataclass(frozen=True)
class NewTranscript:
    file: NewFile
    record: TranscriptRecord
    messages: Sequence[Message]


@dataclass(frozen=True)
class TranscriptAppend:
    file_id: int
    first_ordinal: int  # chunks from this one on are replaced by `chunks`
    chunks: Sequence[Chunk]
    first_seq: int  # position of the first new message on the active branch
    messages: Sequence[Message]
    record: TranscriptRecord
    touch: TranscriptTouch


@dataclass(frozen=True)
class TranscriptState:
    """An indexed transcript as the next sync compares it with the file."""

    file_id: int
    session_key: str
    size: int
    mtime_ns: int
    chunking: str
    title: str
    last_activity: str
    position: ReadPosition
    tail_check: str
    messages: int
    skipped: LineCounts


@dataclass(frozen=True)
class TranscriptInfo:
    file_id: int
    session_key: str
    agent: str
    parent_key: str | None
    started: str
    last_activity: str
    messages: int


@dataclass(frozen=True)
class StoredMessage:
    seq: int  # position on the active branch, from 0
    line: int
    timestamp: str
    role: str
    text: str


@dataclass(frozen=True)
class TranscriptHit:
    session_key: str
    timestamp: str
    role: str
    excerpt: str
    line: int
    seq: int


@dataclass(frozen=True)
class TranscriptSkips:
    session_key: str
    location: str
    lines: LineCounts


@dataclass(frozen=True)
class TranscriptSummary:
    files: int
    messages: int
    chunks: int
    skipped: tuple[TranscriptSkips, ...]  # only transcripts with skipped lines
    agents: tuple[tuple[str, int], ...] = ()  # (agent, its transcripts), by agent


class TranscriptStore:
    """The transcripts of one `Store`, read and written through its connection."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._db = store.connection

    def states(self) -> dict[str, TranscriptState]:
        rows = self._db.execute(
            "SELECT t.file_id, t.session_key, f.size, f.mtime_ns, f.chunking, f.title, "
            "t.last_activity, t.read_bytes, t.read_lines, t.last_entry, t.tip, t.frontier, "
            "t.tail_check, t.messages, t.malformed, t.unknown, t.oversized "
            "FROM transcripts t JOIN files f ON f.id = t.file_id"
        )
        states = {}
        for row in rows:
            position = ReadPosition(row[7], row[8], row[9], row[10], tuple(json.loads(row[11])))
            file_id, session_key, size, mtime_ns, chunking, title, last_activity = row[:7]
            states[session_key] = TranscriptState(
                file_id,
                session_key,
                size,
                mtime_ns,
                chunking,
                title,
                last_activity,
                position,
                row[12],
                row[13],
                LineCounts(*row[14:17]),
            )
        return states

    def add(self, new: NewTranscript) -> int:
        """Insert (or replace) a transcript read from its start; returns its file id."""
        file_id, _chunk_ids = self._store.add_file(new.file)
        record = new.record
        self._db.execute(
            "INSERT INTO transcripts(file_id, session_key, agent_id, parent_key, location, "
            "started) VALUES (?,?,?,?,?,?)",
            (
                file_id,
                record.session_key,
                record.agent,
                record.parent_key,
                record.location,
                record.started,
            ),
        )
        self._record_read(file_id, record, len(new.messages))
        self._insert_messages(file_id, 0, new.messages)
        return file_id

    def append(self, append: TranscriptAppend) -> None:
        """Replace a transcript's chunks from `first_ordinal` on and add the messages read
        since the last sync (the tail); everything before stays as it is."""
        file_id = append.file_id
        self._db.execute(
            "DELETE FROM chunks WHERE file_id = ? AND ordinal >= ?", (file_id, append.first_ordinal)
        )
        self._store.insert_chunks(file_id, append.chunks)
        self._insert_messages(file_id, append.first_seq, append.messages)
        self.touch(file_id, append.touch)
        self._record_read(file_id, append.record, append.first_seq + len(append.messages))

    def touch(self, file_id: int, touch: TranscriptTouch) -> None:
        """What the files row says of a transcript whose read moved on."""
        self._db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, title = ?, note_date = ?, dated = ? "
            "WHERE id = ?",
            (touch.size, touch.mtime_ns, touch.title, touch.day, touch.day, file_id),
        )

    def record_read(self, file_id: int, record: TranscriptRecord) -> None:
        """A read that found no new message: only how far it got changes."""
        messages = self._db.execute(
            "SELECT messages FROM transcripts WHERE file_id = ?", (file_id,)
        ).fetchone()[0]
        self._record_read(file_id, record, int(messages))

    def _record_read(self, file_id: int, record: TranscriptRecord, messages: int) -> None:
        position = record.position
        self._db.execute(
            "UPDATE transcripts SET last_activity = ?, read_bytes = ?, "
            "read_lines = ?, tail_check = ?, last_entry = ?, tip = ?, frontier = ?, "
            "messages = ?, malformed = ?, unknown = ?, oversized = ? WHERE file_id = ?",
            (
                record.last_activity,
                position.offset,
                position.lines,
                record.tail_check,
                position.last_entry,
                position.tip,
                json.dumps(list(position.frontier)),
                messages,
                record.skipped.malformed,
                record.skipped.unknown,
                record.skipped.oversized,
                file_id,
            ),
        )

    def _insert_messages(self, file_id: int, first_seq: int, messages: Sequence[Message]) -> None:
        self._db.executemany(
            "INSERT INTO transcript_messages(file_id, seq, line, timestamp, role, text) "
            "VALUES (?,?,?,?,?,?)",
            [
                (file_id, first_seq + offset, m.line, m.timestamp, m.role, m.text)
                for offset, m in enumerate(messages)
            ],
        )

    def chunk_lines(self, file_id: int) -> list[tuple[int, int, int]]:
        """(ordinal, start line, end line) of a transcript's chunks, in order."""
        rows = self._db.execute(
            "SELECT ordinal, start_line, end_line FROM chunks WHERE file_id = ? ORDER BY ordinal",
            (file_id,),
        )
        return [(int(a), int(b), int(c)) for a, b, c in rows]

    def messages_from_line(self, file_id: int, line: int) -> list[Message]:
        rows = self._db.execute(
            "SELECT line, timestamp, role, text FROM transcript_messages "
            "WHERE file_id = ? AND line >= ? ORDER BY seq",
            (file_id, line),
        )
        return [Message("", int(n), str(ts), str(role), str(text)) for n, ts, role, text in rows]

    def file_ids(self) -> list[int]:
        rows = self._db.execute("SELECT id FROM files WHERE source = 'sessions'")
        return [int(row[0]) for row in rows]

    def summary(self) -> TranscriptSummary:
        files, messages, chunks = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(messages), 0), "
            "(SELECT COUNT(*) FROM chunks c JOIN files f ON f.id = c.file_id "
            "WHERE f.source = 'sessions') FROM transcripts"
        ).fetchone()
        rows = self._db.execute(
            "SELECT session_key, location, malformed, unknown, oversized FROM transcripts "
            "WHERE malformed + unknown + oversized > 0 ORDER BY session_key"
        )
        skipped = tuple(
            TranscriptSkips(str(key), str(location), LineCounts(int(a), int(b), int(c)))
            for key, location, a, b, c in rows
        )
        agents = self._db.execute(
            "SELECT agent_id, COUNT(*) FROM transcripts GROUP BY agent_id ORDER BY agent_id"
        )
        return TranscriptSummary(
            int(files),
            int(messages),
            int(chunks),
            skipped,
            tuple((str(agent), int(count)) for agent, count in agents),
        )

    def find(self, session_key: str, scope: SessionScope) -> TranscriptInfo | None:
        """The transcript with this key if `scope` sees it (an unseen one is not there)."""
        visible, params = scope.visible_files()
        row = self._db.execute(
            "SELECT file_id, session_key, agent_id, parent_key, started, last_activity, "
            f"messages FROM transcripts WHERE session_key = ? AND file_id IN ({visible})",
            [session_key, *params],
        ).fetchone()
        return None if row is None else TranscriptInfo(*row)

    def messages(self, file_id: int, first_seq: int, limit: int) -> list[StoredMessage]:
        rows = self._db.execute(
            "SELECT seq, line, timestamp, role, text FROM transcript_messages "
            "WHERE file_id = ? AND seq >= ? ORDER BY seq LIMIT ?",
            (file_id, first_seq, limit),
        )
        return [StoredMessage(*row) for row in rows]

    def seq_at(self, file_id: int, *, timestamp: str = "", line: int = 0) -> int:
        """The position of the message nearest `timestamp`, or the first at or after `line`
        (the last message when none is)."""
        if timestamp:
            row = self._db.execute(
                "SELECT seq FROM transcript_messages WHERE file_id = ? AND timestamp != '' "
                "ORDER BY abs(julianday(timestamp) - julianday(?)), seq LIMIT 1",
                (file_id, timestamp),
            ).fetchone()
        else:
            row = self._db.execute(
                "SELECT seq FROM transcript_messages WHERE file_id = ? AND line >= ? "
                "ORDER BY seq LIMIT 1",
                (file_id, line),
            ).fetchone()
        if row is None:
            row = self._db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM transcript_messages WHERE file_id = ?",
                (file_id,),
            ).fetchone()
        return int(row[0])

    def search(self, match: str, scope: SessionScope, limit: int) -> list[TranscriptHit]:
        """Messages matching an FTS5 query among the transcripts `scope` sees: best match
        first, the newest first among equals."""
        visible, params = scope.visible_files()
        rows = self._db.execute(
            "SELECT t.session_key, m.timestamp, m.role, "
            "snippet(transcript_text, 0, '', '', '…', 24), m.line, m.seq "
            "FROM transcript_text JOIN transcript_messages m ON m.id = transcript_text.rowid "
            "JOIN transcripts t ON t.file_id = m.file_id "
            f"WHERE transcript_text MATCH ? AND m.file_id IN ({visible}) "
            "ORDER BY transcript_text.rank, m.timestamp DESC, m.id DESC LIMIT ?",
            [match, *params, limit],
        )
        return [TranscriptHit(*row) for row in rows]
