"""The SQLite store: files, chunks, skipped files, embedding cache and meta (WAL, migrations)."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from apus.errors import ApusError, IndexCorruptError, Problem
from apus.index.note_filter import NoteFilter, SessionScope
from apus.vault.chunk import Chunk
from apus.vault.transcripts import LineCounts, Message, ReadPosition

SCHEMA_VERSION = 3
# Values bound per `IN (...)` query: well under SQLite's default limit of 999 parameters.
_IN_BATCH = 500

# Each entry migrates from version N-1 to N; append, never edit, so old stores upgrade in order.
_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        title TEXT NOT NULL,
        note_date TEXT,
        importance REAL,
        triggers TEXT NOT NULL DEFAULT '[]',
        chunking TEXT NOT NULL,
        replaced_utf8 INTEGER NOT NULL DEFAULT 0,
        indexed_at REAL NOT NULL
    );
    CREATE INDEX files_sha ON files(sha256);
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
        ordinal INTEGER NOT NULL,
        start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL,
        heading TEXT NOT NULL,
        text TEXT NOT NULL,
        tokens INTEGER NOT NULL
    );
    CREATE INDEX chunks_file ON chunks(file_id);
    CREATE TABLE skipped (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
    -- files indexed with a caveat (e.g. invalid UTF-8 replaced) are in files.replaced_utf8
    CREATE TABLE embedding_cache (
        key TEXT PRIMARY KEY,
        dims INTEGER NOT NULL,
        vector BLOB NOT NULL,
        created REAL NOT NULL
    );
    CREATE TABLE chunk_vectors (
        chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
        identity TEXT NOT NULL,
        cache_key TEXT NOT NULL
    );
    """,
    # 2: what search filters by. `dated` is the note's date for --since/--until (its file
    # name's, else its frontmatter's, else its modification day); `tags` are frontmatter tags,
    # folded; `source` is the corpus (memory notes, or agent transcripts when enabled).
    # Tags and dates come from each note's text, so every note is read again on the next
    # sync (its vectors come back from the cache: nothing is embedded twice).
    """
    ALTER TABLE files ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE files ADD COLUMN dated TEXT;
    ALTER TABLE files ADD COLUMN source TEXT NOT NULL DEFAULT 'memory';
    CREATE INDEX files_dated ON files(dated);
    UPDATE files SET chunking = '';
    """,
    # 3: agent session transcripts (source 'sessions'). A transcript is a `files` row (its
    # chunks are searched like a note's) plus a `transcripts` row: who it belongs to, what it
    # was spawned from (visibility), and how far it has been read (appends read only the
    # tail). Its active-branch messages are kept for exact search (FTS5) and history.
    """
    CREATE INDEX files_source ON files(source);
    CREATE TABLE transcripts (
        file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
        session_key TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        parent_key TEXT,
        location TEXT NOT NULL,
        started TEXT NOT NULL DEFAULT '',
        last_activity TEXT NOT NULL DEFAULT '',
        read_bytes INTEGER NOT NULL DEFAULT 0,
        read_lines INTEGER NOT NULL DEFAULT 0,
        tail_check TEXT NOT NULL DEFAULT '',
        last_entry TEXT,
        tip TEXT,
        frontier TEXT NOT NULL DEFAULT '[]',
        messages INTEGER NOT NULL DEFAULT 0,
        malformed INTEGER NOT NULL DEFAULT 0,
        unknown INTEGER NOT NULL DEFAULT 0,
        oversized INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX transcripts_agent ON transcripts(agent_id);
    CREATE INDEX transcripts_parent ON transcripts(parent_key);
    CREATE TABLE transcript_messages (
        id INTEGER PRIMARY KEY,
        file_id INTEGER NOT NULL REFERENCES transcripts(file_id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        line INTEGER NOT NULL,
        timestamp TEXT NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL
    );
    CREATE UNIQUE INDEX transcript_messages_seq ON transcript_messages(file_id, seq);
    CREATE VIRTUAL TABLE transcript_text USING fts5(
        text, content='transcript_messages', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER transcript_messages_added AFTER INSERT ON transcript_messages BEGIN
        INSERT INTO transcript_text(rowid, text) VALUES (new.id, new.text);
    END;
    CREATE TRIGGER transcript_messages_removed AFTER DELETE ON transcript_messages BEGIN
        INSERT INTO transcript_text(transcript_text, rowid, text)
        VALUES ('delete', old.id, old.text);
    END;
    """,
)


_REBUILD_FIX = (
    "apus memory index --force  (moves the damaged file aside and rebuilds the index "
    "from your notes)"
)
# What a store's `set_aside` meta records: where the damaged database went, and why.
_SET_ASIDE_KEY = "store.set_aside"
_EMBED_FAILURE_KEY = "embed.failure"  # why the last sync's embedding stopped short
_HIGHEST_CHUNK_KEY = "chunks.highest_id"


class IndexWriteError(ApusError):
    """The index could not be written: a full disk, an I/O error, a read-only folder."""


def _user_error(exc: sqlite3.Error, path: Path) -> ApusError | None:
    """The ApusError that says what an SQLite error means for the user; None for the
    errors that are the code's own (a wrong query), which stay tracebacks."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF  # extended codes keep it in the low byte
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return IndexCorruptError(f"The index database {path} is damaged ({exc}).", _REBUILD_FIX)
    if primary == sqlite3.SQLITE_FULL:
        return IndexWriteError(
            f"The disk holding the index {path.parent} is full.",
            "free some space on it, then run the same command again (what was indexed is kept)",
        )
    if primary in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY):
        return IndexWriteError(
            f"The index database {path} cannot be read or written ({exc}).",
            f"check that {path.parent} is a folder you can write to on a working disk",
        )
    return None


def _raise_for_user(exc: sqlite3.Error, path: Path) -> NoReturn:
    error = _user_error(exc, path)
    if error is None:
        raise exc
    raise error from exc


class _Cursor(sqlite3.Cursor):
    """A cursor whose damaged-file, full-disk and I/O errors are ApusErrors: a damaged page
    can be met by any query, and rows are read lazily, so every entry point translates."""

    connection: _Connection

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as exc:
            _raise_for_user(exc, self.connection.store_path)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> _Cursor:
        try:
            return super().executemany(sql, seq_of_parameters)
        except sqlite3.Error as exc:
            _raise_for_user(exc, self.connection.store_path)

    def executescript(self, sql_script: str, /) -> _Cursor:
        try:
            return super().executescript(sql_script)
        except sqlite3.Error as exc:
            _raise_for_user(exc, self.connection.store_path)

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            _raise_for_user(exc, self.connection.store_path)

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            _raise_for_user(exc, self.connection.store_path)

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            _raise_for_user(exc, self.connection.store_path)


class _Connection(sqlite3.Connection):
    """sqlite3.Connection with _Cursor everywhere (its shortcuts and commit included)."""

    store_path: Path

    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> _Cursor:
        return self.cursor().executemany(sql, parameters)

    def executescript(self, sql_script: str, /) -> _Cursor:
        return self.cursor().executescript(sql_script)

    def commit(self) -> None:
        try:
            super().commit()
        except sqlite3.Error as exc:
            _raise_for_user(exc, self.store_path)

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return super().__exit__(*exc_info)
        except sqlite3.Error as exc:
            _raise_for_user(exc, self.store_path)


def _connect(path: Path, *, readonly: bool) -> _Connection:
    if readonly:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        db = sqlite3.connect(uri, uri=True, check_same_thread=False, factory=_Connection)
    else:
        db = sqlite3.connect(path, check_same_thread=False, factory=_Connection)
    db.store_path = path
    return db


@dataclass(frozen=True)
class SetAside:
    """A damaged database moved out of the way; the next open starts an empty store."""

    moved_to: Path
    reason: str


@dataclass(frozen=True)
class FileRecord:
    id: int
    path: str
    size: int
    mtime_ns: int
    sha256: str
    title: str
    note_date: str | None
    importance: float | None
    triggers: tuple[str, ...]
    chunking: str


@dataclass(frozen=True)
class ChunkRecord:
    id: int
    file_id: int
    path: str
    title: str
    ordinal: int
    start_line: int
    end_line: int
    heading: str
    text: str
    tokens: int
    note_date: str | None
    importance: float | None
    source: str = "memory"


@dataclass(frozen=True)
class NewFile:
    """A note ready to be written: its metadata and chunks."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    title: str
    note_date: str | None
    importance: float | None
    triggers: tuple[str, ...]
    chunking: str
    replaced_utf8: bool
    chunks: Iterable[Chunk]  # may be made while add_file writes them (iterated once)
    tags: tuple[str, ...] = ()  # folded
    dated: str | None = None  # ISO day search filters by
    source: str = "memory"


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


class Store:
    """Owns one vault's SQLite database. Not shared between threads: open one per thread."""

    FILENAME = "apus.sqlite"

    def __init__(self, index_dir: Path, *, readonly: bool = False) -> None:
        self.path = index_dir / self.FILENAME
        self.readonly = readonly
        if not readonly:
            try:
                index_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _folder_error(index_dir, exc) from exc
        try:
            self._db = _connect(self.path, readonly=readonly)
            self._db.execute("PRAGMA busy_timeout = 10000")
            if not readonly:
                self._db.execute("PRAGMA journal_mode = WAL")
                self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("PRAGMA foreign_keys = ON")
            if not readonly:
                self._migrate()
                # Names this database: vectors.faiss records it, so a store rebuilt after
                # damage (whose chunk ids start again from 1) never inherits old vectors.
                with self._db:
                    self._db.execute(
                        "INSERT OR IGNORE INTO meta(key, value) "
                        "VALUES ('store_id', lower(hex(randomblob(16))))"
                    )
        except sqlite3.DatabaseError as exc:  # what the cursors leave as it is (a lock)
            raise IndexCorruptError(
                f"The index database {self.path} cannot be read ({exc}).", fix=_REBUILD_FIX
            ) from exc

    @classmethod
    def exists(cls, index_dir: Path) -> bool:
        """True once a database with a schema is there: one being created does not count yet."""
        path = index_dir / cls.FILENAME
        if not path.is_file():
            return False
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error:
            return True  # there but unreadable: opening it gives the error with its fix
        try:
            db.execute("PRAGMA busy_timeout = 10000")
            return int(db.execute("PRAGMA user_version").fetchone()[0]) > 0
        except sqlite3.Error:
            return True
        finally:
            db.close()

    def close(self) -> None:
        self._db.close()

    # -- damage -------------------------------------------------------------------------

    @classmethod
    def set_aside_if_damaged(cls, index_dir: Path, *, thorough: bool = False) -> SetAside | None:
        """Move a damaged database (with its -wal and -shm) aside; the caller then opens an
        empty store and fills it from the notes, which are the truth it was derived from.

        Always checked: that the database opens and its schema reads (a garbled header).
        `thorough` adds `PRAGMA quick_check`, which reads every page (a truncated file, a
        garbled page in the middle). Call it holding the writer lock. Returns what was
        moved and why, also recorded in the new store's meta (`set_aside()`).
        """
        path = index_dir / cls.FILENAME
        if not path.is_file():
            return None
        reason = _damage(path, thorough=thorough)
        if reason is None:
            return None
        moved = SetAside(_move_aside(path), reason)
        fresh = cls(index_dir)
        try:
            with fresh.transaction():
                fresh.set_meta(
                    _SET_ASIDE_KEY,
                    json.dumps(
                        {"moved_to": str(moved.moved_to), "reason": reason, "at": time.time()}
                    ),
                )
                # A generation the derived indexes cannot already carry: they are rebuilt.
                fresh.set_meta("generation", str(time.time_ns()))
        finally:
            fresh.close()
        return moved

    @classmethod
    def damage(cls, index_dir: Path) -> str | None:
        """Why the database is damaged (`PRAGMA quick_check` included), or None; moves nothing."""
        path = index_dir / cls.FILENAME
        return _damage(path, thorough=True) if path.is_file() else None

    def set_aside(self) -> SetAside | None:
        """The damaged database this store replaced, if it replaced one."""
        raw = self.get_meta(_SET_ASIDE_KEY)
        if not raw:
            return None
        record = json.loads(raw)
        return SetAside(Path(record["moved_to"]), str(record["reason"]))

    def store_id(self) -> str:
        """A random name given to this database when it was created ("" if older)."""
        return self.get_meta("store_id", "") or ""

    # -- a forced rebuild: a new database beside the live one --------------------------

    def continue_from(self, live: Path) -> None:
        """Make this new, empty database carry on from the live one at `live`, which it is
        built to replace: the embedding cache (text already embedded is never embedded
        again), the record of a damaged database set aside, the chunk-id counter (an id
        is never given to another text, even across the swap) and the generation (readers
        see it move on)."""
        with self._attached(live, "live"), self._db:
            self._copy_cache("live", "main")
            self._db.execute(
                "INSERT OR REPLACE INTO main.meta(key, value) "
                "SELECT key, value FROM live.meta WHERE key = ?",
                (_SET_ASIDE_KEY,),
            )
            row = self._db.execute("SELECT MAX(id) FROM live.chunks").fetchone()
            given = self._db.execute(
                "SELECT value FROM live.meta WHERE key = ?", (_HIGHEST_CHUNK_KEY,)
            ).fetchone()
            highest = max(int(row[0] or 0), int(given[0]) if given else 0)
            self.set_meta(_HIGHEST_CHUNK_KEY, str(highest))
            generation = self._db.execute(
                "SELECT value FROM live.meta WHERE key = 'generation'"
            ).fetchone()
            self.set_meta("generation", str(int(generation[0] if generation else 0) + 1))

    def salvage_cache_from(self, other: Path) -> None:
        """Copy the embedding cache of a half-built database into this one, if it can be
        read at all (a run killed while creating it leaves one that cannot): what was
        embedded there is not embedded again."""
        try:
            with self._attached(other, "other"), self._db:
                self._copy_cache("other", "main")
        except (sqlite3.Error, ApusError):  # unreadable, no schema yet, or no room: skipped
            return

    def replace_with(self, source: Store) -> None:
        """Make this database a copy of `source` in one write transaction (SQLite's backup
        API): a reader, however long it has held its connection, sees the old content or
        the new, never a mix, and a run killed half-way leaves the old one whole."""
        try:
            source._db.backup(self._db)
        except sqlite3.Error as exc:
            _raise_for_user(exc, self.path)
        # The copy sits in the WAL until a checkpoint: fold it into the file, shrink the WAL.
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    @contextmanager
    def _attached(self, path: Path, name: str) -> Iterator[None]:
        """The database at `path` as schema `name` of this connection, for one copy."""
        self._db.execute(f"ATTACH DATABASE ? AS {name}", (str(path),))
        try:
            yield
        finally:
            self._db.execute(f"DETACH DATABASE {name}")

    def _copy_cache(self, source: str, target: str) -> None:
        self._db.execute(
            f"INSERT OR IGNORE INTO {target}.embedding_cache(key, dims, vector, created) "
            f"SELECT key, dims, vector, created FROM {source}.embedding_cache"
        )

    # -- schema -------------------------------------------------------------------------

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise IndexCorruptError(
                f"The index at {self.path} was written by a newer Apus (schema {version}).",
                fix="upgrade Apus, or rebuild with `apus memory index --force`",
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            # One transaction per step, the version bump included: a reader never sees a
            # half-made schema, and a killed migration leaves the previous version whole.
            try:
                self._db.executescript(
                    f"BEGIN IMMEDIATE;\n{_MIGRATIONS[target - 1]}\n"
                    f"PRAGMA user_version = {target};\nCOMMIT;"
                )
            except BaseException:
                if self._db.in_transaction:
                    self._db.rollback()
                raise

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self._db:
            yield

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Inside `transaction()`: a part that is undone alone when it raises, so one note
        the database refuses does not undo the batch it is written with."""
        if not self._db.in_transaction:
            # SAVEPOINT outside a transaction would start one that RELEASE commits.
            self._db.execute("BEGIN")
        self._db.execute("SAVEPOINT part")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK TO part")
            self._db.execute("RELEASE part")
            raise
        self._db.execute("RELEASE part")

    # -- meta ---------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO meta(key, value) VALUES(?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def record_embed_failure(self, failure: Problem | None) -> None:
        """Why an embedding step stopped short, or None once one completes: every process's
        search and status say "stopped" instead of "being built" from it."""
        value = "" if failure is None else json.dumps(dataclasses.asdict(failure))
        if value or self.get_meta(_EMBED_FAILURE_KEY):
            self.set_meta(_EMBED_FAILURE_KEY, value)

    def embed_failure(self) -> Problem | None:
        raw = self.get_meta(_EMBED_FAILURE_KEY)
        if not raw:
            return None
        try:
            data = json.loads(raw)
            return Problem(str(data["reason"]), str(data.get("fix", "")))
        except (ValueError, KeyError, TypeError):
            return None

    def data_version(self) -> int:
        """Changes whenever another connection commits: a cheap "has anything changed?"."""
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def generation(self) -> int:
        return int(self.get_meta("generation", "0") or 0)

    def bump_generation(self) -> int:
        new = self.generation() + 1
        self.set_meta("generation", str(new))
        return new

    # -- files and chunks ---------------------------------------------------------------

    def files(self, source: str | None = None) -> dict[str, FileRecord]:
        """Every indexed file by path, or those of one source ("memory": the notes)."""
        query = (
            "SELECT id, path, size, mtime_ns, sha256, title, note_date, importance, triggers, "
            "chunking FROM files"
        )
        rows = (
            self._db.execute(query)
            if source is None
            else self._db.execute(query + " WHERE source = ?", (source,))
        )
        return {row[1]: _file_record(row) for row in rows}

    def file_by_path(self, path: str) -> FileRecord | None:
        row = self._db.execute(
            "SELECT id, path, size, mtime_ns, sha256, title, note_date, importance, triggers, "
            "chunking FROM files WHERE path = ?",
            (path,),
        ).fetchone()
        return _file_record(row) if row else None

    def add_file(
        self, new: NewFile, reuse_ids: Sequence[int | None] | None = None
    ) -> tuple[int, list[int]]:
        """Insert (or replace) a file and its chunks; returns file id and chunk ids.

        `reuse_ids` gives chunks the id they already have in the live store a forced rebuild
        replaces (None: a fresh id); only ids of the same text may be passed.
        """
        self._db.execute("DELETE FROM files WHERE path = ?", (new.path,))
        cursor = self._db.execute(
            "INSERT INTO files(path, size, mtime_ns, sha256, title, note_date, importance, "
            "triggers, chunking, replaced_utf8, indexed_at, tags, dated, source) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                new.path,
                new.size,
                new.mtime_ns,
                new.sha256,
                new.title,
                new.note_date,
                new.importance,
                json.dumps(list(new.triggers), ensure_ascii=False),
                new.chunking,
                int(new.replaced_utf8),
                time.time(),
                json.dumps(list(new.tags), ensure_ascii=False),
                new.dated,
                new.source,
            ),
        )
        file_id = int(cursor.lastrowid or 0)
        chunk_ids: list[int] = []
        next_id = self._next_chunk_id()
        fresh = 0
        for index, chunk in enumerate(new.chunks):
            chunk_id = reuse_ids[index] if reuse_ids is not None else None
            if chunk_id is None:
                chunk_id = next_id + fresh
                fresh += 1
            cur = self._db.execute(
                "INSERT INTO chunks(id, file_id, ordinal, start_line, end_line, heading, text, "
                "tokens) VALUES (?,?,?,?,?,?,?,?)",
                (
                    chunk_id,
                    file_id,
                    chunk.ordinal,
                    chunk.start_line,
                    chunk.end_line,
                    " > ".join(chunk.heading_path),
                    chunk.text,
                    chunk.tokens,
                ),
            )
            chunk_ids.append(int(cur.lastrowid or 0))
        if fresh:
            self.set_meta(_HIGHEST_CHUNK_KEY, str(next_id + fresh - 1))
        return file_id, chunk_ids

    def _next_chunk_id(self) -> int:
        """Chunk ids are never given twice: SQLite would hand out the ids of the highest
        rows again once they are deleted (edit the newest note), and vectors.faiss, which
        keeps vectors by chunk id, would then answer with the old text's vector."""
        highest = self._db.execute("SELECT MAX(id) FROM chunks").fetchone()[0] or 0
        given = int(self.get_meta(_HIGHEST_CHUNK_KEY, "0") or 0)
        return max(int(highest), given) + 1

    def delete_files(self, file_ids: Iterable[int]) -> None:
        self._db.executemany("DELETE FROM files WHERE id = ?", [(i,) for i in file_ids])

    def rename_file(
        self,
        file_id: int,
        new_path: str,
        size: int,
        mtime_ns: int,
        *,
        title: str,
        note_date: str | None,
        dated: str | None,
    ) -> None:
        """Move a file's record (its chunks stay); title and dates may come from the name."""
        self._db.execute(
            "UPDATE files SET path = ?, size = ?, mtime_ns = ?, title = ?, note_date = ?, "
            "dated = ? WHERE id = ?",
            (new_path, size, mtime_ns, title, note_date, dated, file_id),
        )

    def touch_file(self, file_id: int, size: int, mtime_ns: int) -> None:
        self._db.execute(
            "UPDATE files SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, file_id)
        )

    def _rows_in(
        self, query: str, values: Sequence[object], leading: Sequence[object] = ()
    ) -> Iterator[tuple]:  # type: ignore[type-arg]
        """Rows of `query` (with `{marks}` in its IN list, after `leading` parameters) for any
        number of values, in batches under SQLite's limit on bound parameters."""
        values = list(values)
        for start in range(0, len(values), _IN_BATCH):
            part = values[start : start + _IN_BATCH]
            marks = ",".join("?" * len(part))
            yield from self._db.execute(query.format(marks=marks), [*leading, *part])

    def chunk_ids_of_files(self, file_ids: Sequence[int]) -> list[int]:
        query = "SELECT id FROM chunks WHERE file_id IN ({marks})"
        return [row[0] for row in self._rows_in(query, file_ids)]

    _CHUNK_SELECT = (
        "SELECT c.id, c.file_id, f.path, f.title, c.ordinal, c.start_line, c.end_line, "
        "c.heading, c.text, c.tokens, f.note_date, f.importance, f.source "
        "FROM chunks c JOIN files f ON f.id = c.file_id"
    )

    def chunks_by_id(self, chunk_ids: Sequence[int]) -> dict[int, ChunkRecord]:
        query = self._CHUNK_SELECT + " WHERE c.id IN ({marks})"
        return {row[0]: ChunkRecord(*row) for row in self._rows_in(query, chunk_ids)}

    def iter_chunks(self, file_ids: Sequence[int] | None = None) -> Iterator[ChunkRecord]:
        if file_ids is None:
            rows = self._db.execute(f"{self._CHUNK_SELECT} ORDER BY c.id")
        else:
            query = self._CHUNK_SELECT + " WHERE c.file_id IN ({marks}) ORDER BY c.id"
            rows = self._rows_in(query, file_ids)
        for row in rows:
            yield ChunkRecord(*row)

    def first_chunk_of_files(self, file_ids: Sequence[int]) -> dict[int, ChunkRecord]:
        query = self._CHUNK_SELECT + " WHERE c.file_id IN ({marks}) AND c.ordinal = 0"
        records = (ChunkRecord(*row) for row in self._rows_in(query, file_ids))
        return {record.file_id: record for record in records}

    def holds_other_sources(self, sources: Sequence[str]) -> bool:
        """Whether any indexed file comes from a source not in `sources`."""
        marks = ",".join("?" * len(sources)) or "NULL"
        row = self._db.execute(
            f"SELECT 1 FROM files WHERE source NOT IN ({marks}) LIMIT 1", list(sources)
        ).fetchone()
        return row is not None

    def file_ids_matching(self, note_filter: NoteFilter) -> set[int]:
        if "sessions" in note_filter.sources and not self.has_transcripts():
            # Not upgraded by a sync yet: no transcripts, and no table to scope them by.
            kept = tuple(source for source in note_filter.sources if source != "sessions")
            note_filter = dataclasses.replace(note_filter, sources=kept)
        where, params = note_filter.where()
        rows = self._db.execute(f"SELECT id FROM files WHERE {where}", params)
        return {int(row[0]) for row in rows}

    def counts(self) -> tuple[int, int]:
        files = self._db.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        chunks = self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return int(files), int(chunks)

    # -- skipped files ------------------------------------------------------------------

    def replace_skipped(self, skipped: Iterable[tuple[str, str]]) -> None:
        self._db.execute("DELETE FROM skipped")
        self._db.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)", skipped)

    def skipped(self) -> list[tuple[str, str]]:
        rows = self._db.execute("SELECT path, reason FROM skipped ORDER BY path")
        return [(str(path), str(reason)) for path, reason in rows]

    def files_with_replaced_utf8(self) -> list[str]:
        rows = self._db.execute("SELECT path FROM files WHERE replaced_utf8 = 1 ORDER BY path")
        return [str(row[0]) for row in rows]

    # -- embeddings ---------------------------------------------------------------------

    def cached_vectors(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        query = "SELECT key, dims, vector FROM embedding_cache WHERE key IN ({marks})"
        return {
            key: np.frombuffer(blob, dtype=np.float32, count=dims)
            for key, dims, blob in self._rows_in(query, keys)
        }

    def put_vectors(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        now = time.time()
        self._db.executemany(
            "INSERT OR REPLACE INTO embedding_cache(key, dims, vector, created) VALUES (?,?,?,?)",
            [
                (key, int(vec.shape[0]), np.ascontiguousarray(vec, np.float32).tobytes(), now)
                for key, vec in items
            ],
        )

    def set_chunk_vectors(self, rows: Iterable[tuple[int, str, str]]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO chunk_vectors(chunk_id, identity, cache_key) VALUES (?,?,?)",
            rows,
        )

    def forget_vectors(self, identity_key: str) -> None:
        """Drop every cached vector and chunk link of one identity (a forced re-embed)."""
        self._db.execute("DELETE FROM chunk_vectors WHERE identity = ?", (identity_key,))
        self._db.execute(
            "DELETE FROM embedding_cache WHERE key >= ? AND key < ?",
            (f"{identity_key}:", f"{identity_key};"),
        )

    def chunks_missing_vectors(self, identity_key: str) -> list[int]:
        rows = self._db.execute(
            "SELECT c.id FROM chunks c LEFT JOIN chunk_vectors v "
            "ON v.chunk_id = c.id AND v.identity = ? WHERE v.chunk_id IS NULL ORDER BY c.id",
            (identity_key,),
        )
        return [row[0] for row in rows]

    def paths_missing_vectors(self, identity_key: str) -> list[tuple[int, str]]:
        """(chunk id, file path) of every chunk without a vector for the identity, by id."""
        rows = self._db.execute(
            "SELECT c.id, f.path FROM chunks c JOIN files f ON f.id = c.file_id "
            "LEFT JOIN chunk_vectors v ON v.chunk_id = c.id AND v.identity = ? "
            "WHERE v.chunk_id IS NULL ORDER BY c.id",
            (identity_key,),
        )
        return [(row[0], row[1]) for row in rows]

    def vector_chunk_ids(self, identity_key: str) -> set[int]:
        rows = self._db.execute(
            "SELECT chunk_id FROM chunk_vectors WHERE identity = ?", (identity_key,)
        )
        return {row[0] for row in rows}

    def vectors_for_chunks(
        self, identity_key: str, chunk_ids: Sequence[int]
    ) -> Iterator[tuple[int, np.ndarray]]:
        query = (
            "SELECT v.chunk_id, e.dims, e.vector FROM chunk_vectors v "
            "JOIN embedding_cache e ON e.key = v.cache_key "
            "WHERE v.identity = ? AND v.chunk_id IN ({marks})"
        )
        for chunk_id, dims, blob in self._rows_in(query, chunk_ids, leading=(identity_key,)):
            yield chunk_id, np.frombuffer(blob, dtype=np.float32, count=dims)

    def vector_count(self, identity_key: str) -> int:
        row = self._db.execute(
            "SELECT COUNT(*) FROM chunk_vectors WHERE identity = ?", (identity_key,)
        ).fetchone()
        return int(row[0])

    def cache_size(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0])

    # -- transcripts ----------------------------------------------------------------------
    # Agent session transcripts: `files` rows of source 'sessions' (their chunks are searched
    # like notes), their `transcripts` rows, and their active-branch messages with the FTS5
    # index `transcript_text` (kept by triggers). Deleting the `files` row deletes the rest.

    def has_transcripts(self) -> bool:
        """Whether the schema holds transcripts (a store not yet upgraded by a sync does not)."""
        return int(self._db.execute("PRAGMA user_version").fetchone()[0]) >= 3

    def transcript_states(self) -> dict[str, TranscriptState]:
        rows = self._db.execute(
            "SELECT t.file_id, t.session_key, f.size, f.mtime_ns, f.chunking, f.title, "
            "t.last_activity, t.read_bytes, t.read_lines, t.last_entry, t.tip, t.frontier, "
            "t.tail_check, t.messages, t.malformed, t.unknown, t.oversized "
            "FROM transcripts t JOIN files f ON f.id = t.file_id"
        )
        states = {}
        for row in rows:
            position = ReadPosition(row[7], row[8], row[9], row[10], tuple(json.loads(row[11])))
            states[row[1]] = TranscriptState(
                *row[:7], position, row[12], row[13], LineCounts(*row[14:17])
            )
        return states

    def add_transcript(self, new: NewTranscript) -> int:
        """Insert (or replace) a transcript read from its start; returns its file id."""
        file_id, _chunk_ids = self.add_file(new.file)
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

    def append_transcript(self, append: TranscriptAppend) -> None:
        """Replace a transcript's chunks from `first_ordinal` on and add the messages read
        since the last sync (the tail); everything before stays as it is."""
        file_id = append.file_id
        self._db.execute(
            "DELETE FROM chunks WHERE file_id = ? AND ordinal >= ?", (file_id, append.first_ordinal)
        )
        self._insert_chunks(file_id, append.chunks)
        self._insert_messages(file_id, append.first_seq, append.messages)
        self.touch_transcript(file_id, append.touch)
        self._record_read(file_id, append.record, append.first_seq + len(append.messages))

    def touch_transcript(self, file_id: int, touch: TranscriptTouch) -> None:
        """What the files row says of a transcript whose read moved on."""
        self._db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, title = ?, note_date = ?, dated = ? "
            "WHERE id = ?",
            (touch.size, touch.mtime_ns, touch.title, touch.day, touch.day, file_id),
        )

    def record_transcript_read(self, file_id: int, record: TranscriptRecord) -> None:
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

    def _insert_chunks(self, file_id: int, chunks: Sequence[Chunk]) -> None:
        next_id = self._next_chunk_id()
        self._db.executemany(
            "INSERT INTO chunks(id, file_id, ordinal, start_line, end_line, heading, text, "
            "tokens) VALUES (?,?,?,?,?,?,?,?)",
            [
                (
                    next_id + offset,
                    file_id,
                    chunk.ordinal,
                    chunk.start_line,
                    chunk.end_line,
                    " > ".join(chunk.heading_path),
                    chunk.text,
                    chunk.tokens,
                )
                for offset, chunk in enumerate(chunks)
            ],
        )
        if chunks:
            self.set_meta(_HIGHEST_CHUNK_KEY, str(next_id + len(chunks) - 1))

    def _insert_messages(self, file_id: int, first_seq: int, messages: Sequence[Message]) -> None:
        self._db.executemany(
            "INSERT INTO transcript_messages(file_id, seq, line, timestamp, role, text) "
            "VALUES (?,?,?,?,?,?)",
            [
                (file_id, first_seq + offset, m.line, m.timestamp, m.role, m.text)
                for offset, m in enumerate(messages)
            ],
        )

    def transcript_chunk_lines(self, file_id: int) -> list[tuple[int, int, int]]:
        """(ordinal, start line, end line) of a transcript's chunks, in order."""
        rows = self._db.execute(
            "SELECT ordinal, start_line, end_line FROM chunks WHERE file_id = ? ORDER BY ordinal",
            (file_id,),
        )
        return [(int(a), int(b), int(c)) for a, b, c in rows]

    def transcript_messages_from_line(self, file_id: int, line: int) -> list[Message]:
        rows = self._db.execute(
            "SELECT line, timestamp, role, text FROM transcript_messages "
            "WHERE file_id = ? AND line >= ? ORDER BY seq",
            (file_id, line),
        )
        return [Message("", int(n), str(ts), str(role), str(text)) for n, ts, role, text in rows]

    def transcript_file_ids(self) -> list[int]:
        rows = self._db.execute("SELECT id FROM files WHERE source = 'sessions'")
        return [int(row[0]) for row in rows]

    def add_skipped(self, skipped: Iterable[tuple[str, str]]) -> None:
        self._db.executemany("INSERT OR REPLACE INTO skipped(path, reason) VALUES (?, ?)", skipped)

    def transcript_summary(self) -> TranscriptSummary:
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
        return TranscriptSummary(int(files), int(messages), int(chunks), skipped)

    def find_transcript(self, session_key: str, scope: SessionScope) -> TranscriptInfo | None:
        """The transcript with this key if `scope` sees it (an unseen one is not there)."""
        visible, params = scope.visible_files()
        row = self._db.execute(
            "SELECT file_id, session_key, agent_id, parent_key, started, last_activity, "
            f"messages FROM transcripts WHERE session_key = ? AND file_id IN ({visible})",
            [session_key, *params],
        ).fetchone()
        return None if row is None else TranscriptInfo(*row)

    def transcript_messages(self, file_id: int, first_seq: int, limit: int) -> list[StoredMessage]:
        rows = self._db.execute(
            "SELECT seq, line, timestamp, role, text FROM transcript_messages "
            "WHERE file_id = ? AND seq >= ? ORDER BY seq LIMIT ?",
            (file_id, first_seq, limit),
        )
        return [StoredMessage(*row) for row in rows]

    def transcript_seq_at(self, file_id: int, *, timestamp: str = "", line: int = 0) -> int:
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

    def search_transcripts(
        self, match: str, scope: SessionScope, limit: int
    ) -> list[TranscriptHit]:
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


def _file_record(row: Sequence[object]) -> FileRecord:
    return FileRecord(
        id=int(row[0]),  # type: ignore[arg-type]
        path=str(row[1]),
        size=int(row[2]),  # type: ignore[arg-type]
        mtime_ns=int(row[3]),  # type: ignore[arg-type]
        sha256=str(row[4]),
        title=str(row[5]),
        note_date=row[6] if row[6] is None else str(row[6]),
        importance=None if row[7] is None else float(row[7]),  # type: ignore[arg-type]
        triggers=tuple(json.loads(str(row[8]))),
        chunking=str(row[9]),
    )


def _damage(path: Path, *, thorough: bool) -> str | None:
    """Why the database at `path` is damaged, or None when it reads (or fails otherwise:
    a locked or unreadable file is not damage, and opening it reports that)."""
    try:
        db = sqlite3.connect(path)
    except sqlite3.Error:
        return None
    try:
        db.execute("PRAGMA busy_timeout = 10000")
        db.execute("PRAGMA user_version").fetchone()
        db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        if not thorough:
            return None
        problems = [str(row[0]) for row in db.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        return str(exc) if _is_damage(exc) else None
    finally:
        db.close()
    if problems == ["ok"]:
        return None
    return f"quick_check: {problems[0]}" + (
        f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    )


def _is_damage(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _move_aside(path: Path) -> Path:
    """Rename the database to `<name>.damaged-<time>` (its -wal/-shm alongside, first: a
    journal left behind would be replayed into the fresh database)."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    counter = 1
    while target.exists():
        target = path.with_name(f"{path.name}.damaged-{stamp}.{counter}")
        counter += 1
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            os.replace(companion, target.with_name(target.name + suffix))
    os.replace(path, target)
    return target


def _folder_error(index_dir: Path, exc: OSError) -> ApusError:
    if index_dir.exists() and not index_dir.is_dir():
        return IndexWriteError(
            f"The index folder {index_dir} is a file, not a folder.",
            "move that file elsewhere (Apus never deletes it), then run `apus memory index`",
        )
    return IndexWriteError(
        f"Cannot create the index folder {index_dir} ({exc.strerror or exc}).",
        "check that its parent folder is writable, or set memory.search.store.path",
    )
