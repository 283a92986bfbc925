"""The transcript step of a sync: agent session transcripts into the store, by their tails.

Runs inside the Indexer's keyword steps, after the notes. When transcripts are off (either
`memory.search.experimental.sessionMemory` or "sessions" in `memory.search.sources`), it
removes every indexed one. Otherwise, for each transcript of every source
(`apus.vault.transcript_sources`), read in its client's format:

- unchanged size and time: nothing is read;
- grown, and what was read before is still there (a hash of its last bytes): only the lines
  after the previous read are read; if their messages continue the active branch, the last
  chunk is made again with them and new chunks follow (earlier chunks, their vectors and
  messages stay);
- anything else (rewritten, shortened, the conversation went back to an earlier message,
  other chunk settings, `--force`): read again from the start.

A half-written last line is left for the next sync (see `apus.vault.transcripts`). The
keyword index can only drop a note whole, so a transcript that grew has all its chunks
written to Whoosh again; SQLite, FTS5 and the embedding step see only the tail.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from apus.config import Settings
from apus.index.store import ChunkRecord, NewFile, Store
from apus.index.transcript_store import (
    NewTranscript,
    TranscriptAppend,
    TranscriptRecord,
    TranscriptState,
    TranscriptStore,
    TranscriptTouch,
)
from apus.indexing.progress import ProgressCallback, SyncProgress
from apus.vault import transcripts as tx
from apus.vault.transcript_sources import find_transcripts, reader_for, sources
from apus.vault.transcripts import Message, Reading, ReadPosition, TranscriptFile

# Transcripts written per SQLite transaction (and mirrored into Whoosh at once).
_BATCH = 200
# A transcript's title in lists and in the embedding prefix: its first user line, this long.
_TITLE_CHARS = 80

Mirror = Callable[[list[int], Iterable[ChunkRecord], int], None]


@dataclass
class TranscriptReport:
    """What the transcript step did in one sync."""

    enabled: bool = False
    files: int = 0  # transcripts found
    added: int = 0
    appended: int = 0  # read from where the last sync stopped
    reread: int = 0  # read again from the start
    removed: int = 0
    unchanged: int = 0
    messages: int = 0  # messages indexed by this sync
    skipped_lines: int = 0  # lines this sync skipped (malformed, unknown, oversized)


def chunking_signature(settings: Settings) -> str:
    """What a transcript's chunks were made with: a change reads every transcript again."""
    tools = ":tools" if settings.search.sessions.tool_calls else ""
    return f"t{tx.TRANSCRIPT_CHUNKING_VERSION}:{settings.search.chunking.tokens}{tools}"


class _Change:
    """One transcript's writes, decided from the file and the store."""

    def __init__(self, report: TranscriptReport) -> None:
        self.report = report
        self.new: list[NewTranscript] = []
        self.appends: list[TranscriptAppend] = []
        self.reads: list[tuple[int, TranscriptRecord, TranscriptTouch]] = []
        self.replaced: list[int] = []  # file ids whose Whoosh documents go
        self.refreshed: list[int] = []  # file ids whose chunks are (re)written to Whoosh

    def pending(self) -> int:
        return len(self.new) + len(self.appends) + len(self.reads)

    def flush(self, store: Store, mirror: Mirror | None) -> None:
        if not self.pending():
            return
        searched = bool(self.new or self.appends)  # chunks change, not only read positions
        transcripts = TranscriptStore(store)
        with store.transaction():
            added = [transcripts.add(new) for new in self.new]
            for append in self.appends:
                transcripts.append(append)
            for file_id, record, touch in self.reads:
                transcripts.touch(file_id, touch)
                transcripts.record_read(file_id, record)
            generation = store.bump_generation() if searched else store.generation()
        changed = added + self.refreshed
        if mirror is not None and searched:
            mirror(self.replaced + self.refreshed, list(store.iter_chunks(changed)), generation)
        self.new, self.appends, self.reads, self.replaced, self.refreshed = [], [], [], [], []


def sync_transcripts(
    store: Store,
    settings: Settings,
    *,
    force: bool,
    mirror: Mirror | None,
    cancel: threading.Event | None = None,
    emit: ProgressCallback | None = None,
) -> TranscriptReport:
    """Bring the store's transcripts in line with the configured roots (or remove them all
    when transcripts are off). `mirror` applies a committed change to the keyword index
    (None: the keyword index is rebuilt from the store after this step)."""
    report = TranscriptReport(enabled=tx.enabled(settings.search))
    transcripts = TranscriptStore(store)
    if not report.enabled:
        _remove(store, transcripts.file_ids(), mirror, report)
        return report
    found, problems = find_transcripts(sources(settings), cancel)
    report.files = len(found)
    known = transcripts.states()
    keys = {transcript.key for transcript in found}
    _remove(store, [s.file_id for k, s in known.items() if k not in keys], mirror, report)
    signature = chunking_signature(settings)
    change = _Change(report)
    for done, transcript in enumerate(found, start=1):
        if cancel is not None and cancel.is_set():
            break
        state = known.get(transcript.key)
        if state is not None and not force and _same(state, transcript, signature):
            report.unchanged += 1
            continue
        try:
            _plan_one(store, settings, transcript, state, force, change)
        except OSError as exc:  # vanished or unreadable since it was found
            problems.append((tx.store_path(transcript.key), (exc.strerror or str(exc)).lower()))
            if state is not None:
                _remove(store, [state.file_id], mirror, report)
        if change.pending() >= _BATCH:
            change.flush(store, mirror)
        if emit is not None and (done % 100 == 0 or done == len(found)):
            emit(SyncProgress("sessions", done, len(found)))
    change.flush(store, mirror)
    with store.transaction():
        store.add_skipped(problems)
    return report


def _same(state: TranscriptState, transcript: TranscriptFile, signature: str) -> bool:
    return (
        state.size == transcript.size
        and state.mtime_ns == transcript.mtime_ns
        and state.chunking == signature
    )


def _remove(
    store: Store, file_ids: list[int], mirror: Mirror | None, report: TranscriptReport
) -> None:
    if not file_ids:
        return
    with store.transaction():
        store.delete_files(file_ids)
        generation = store.bump_generation()
    report.removed += len(file_ids)
    if mirror is not None:
        mirror(file_ids, [], generation)


def _plan_one(
    store: Store,
    settings: Settings,
    transcript: TranscriptFile,
    state: TranscriptState | None,
    force: bool,
    change: _Change,
) -> None:
    """Decide and prepare one transcript's writes: an append when the file only grew and
    the append continues the active branch, else a read from the start."""
    limit = settings.search.sessions.max_line_bytes
    lines = reader_for(transcript, settings.search.sessions.tool_calls)
    if state is not None and not force and state.chunking == chunking_signature(settings):
        position = state.position
        grown = transcript.size >= position.offset and state.tail_check == tx.tail_check(
            transcript.path, position.offset
        )
        if grown:
            reading = tx.read_transcript(transcript.path, lines, position, limit)
            appended = tx.appended_branch(reading, position)
            if appended is not None:
                _append(store, settings, transcript, state, reading, appended, change)
                return
    reading = tx.read_transcript(transcript.path, lines, ReadPosition(), limit)
    change.new.append(_whole(settings, transcript, reading))
    change.report.messages += len(change.new[-1].messages)
    change.report.skipped_lines += reading.skipped.total
    if state is None:
        change.report.added += 1
    else:
        change.report.reread += 1
        change.replaced.append(state.file_id)


def _whole(settings: Settings, transcript: TranscriptFile, reading: Reading) -> NewTranscript:
    messages = tx.active_branch(reading)
    chunks = tx.chunk_messages(messages, settings.search.chunking.tokens)
    record = _record(transcript, reading, ReadPosition(), reading.skipped, "")
    touch = _touch(transcript, record, _title(messages, transcript.key))
    return NewTranscript(
        NewFile(
            path=tx.store_path(transcript.key),
            size=transcript.size,
            mtime_ns=transcript.mtime_ns,
            sha256="",
            title=touch.title,
            note_date=touch.day,
            importance=None,
            triggers=(),
            chunking=chunking_signature(settings),
            replaced_utf8=False,
            chunks=chunks,
            dated=touch.day,
            source="sessions",
        ),
        record,
        messages,
    )


def _append(
    store: Store,
    settings: Settings,
    transcript: TranscriptFile,
    state: TranscriptState,
    reading: Reading,
    appended: list[Message],
    change: _Change,
) -> None:
    """The tail: the last chunk (from the message it starts with) made again with the new
    messages, and chunks after it."""
    skipped = state.skipped.add(reading.skipped)
    record = _record(transcript, reading, state.position, skipped, state.last_activity)
    change.report.appended += 1
    change.report.skipped_lines += reading.skipped.total
    if not appended:
        title = state.title
        change.reads.append((state.file_id, record, _touch(transcript, record, title)))
        return
    transcripts = TranscriptStore(store)
    first_ordinal, first_line = _open_chunk(transcripts.chunk_lines(state.file_id))
    tail = transcripts.messages_from_line(state.file_id, first_line) if first_line else []
    chunks = tx.chunk_messages([*tail, *appended], settings.search.chunking.tokens, first_ordinal)
    title = state.title
    if title == transcript.key:  # no user message until now
        title = _title(appended, transcript.key)
    change.appends.append(
        TranscriptAppend(
            state.file_id,
            first_ordinal,
            chunks,
            state.messages,
            appended,
            record,
            _touch(transcript, record, title),
        )
    )
    change.refreshed.append(state.file_id)
    change.report.messages += len(appended)


def _open_chunk(lines: list[tuple[int, int, int]]) -> tuple[int, int]:
    """The first chunk an append re-makes, and the line of the message it starts with: the
    last chunk, or an earlier one when the last starts inside a message split over several
    (0 and 0 when there are none)."""
    if not lines:
        return 0, 0
    index = len(lines) - 1
    while index > 0 and lines[index - 1][2] >= lines[index][1]:
        index -= 1
    return lines[index][0], lines[index][1]


def _record(
    transcript: TranscriptFile,
    reading: Reading,
    start: ReadPosition,
    skipped: tx.LineCounts,
    last_activity: str,
) -> TranscriptRecord:
    header = reading.header
    position = tx.position_after(reading, start)
    return TranscriptRecord(
        session_key=transcript.key,
        agent=transcript.agent,
        parent_key=header.parent_key if header is not None else None,
        location=str(transcript.path),
        started=header.timestamp if header is not None else "",
        last_activity=max(last_activity, reading.last_timestamp),
        position=position,
        tail_check=tx.tail_check(transcript.path, position.offset),
        skipped=skipped,
    )


def _touch(transcript: TranscriptFile, record: TranscriptRecord, title: str) -> TranscriptTouch:
    """Recency and date filters go by the last activity; the file's time when no event says."""
    if record.last_activity:
        day = record.last_activity[:10]
    else:
        day = dt.datetime.fromtimestamp(transcript.mtime_ns / 1e9, tz=dt.UTC).date().isoformat()
    return TranscriptTouch(transcript.size, transcript.mtime_ns, title, day)


def _title(messages: list[Message], fallback: str) -> str:
    for message in messages:
        if message.role == "user":
            line = message.text.strip().splitlines()[0].strip()
            return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"
    return fallback
