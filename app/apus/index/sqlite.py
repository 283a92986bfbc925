"""SQLite plumbing of the store: errors in the user's words, and a damaged database set aside.

Every query, fetch and commit on a connection made by `connect` turns a damaged file, a full
disk or an I/O error into an ApusError with its fix; `damage` and `move_aside` find a
damaged database and move it out of the way so an empty one can be filled from the notes.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any, NoReturn

from apus.errors import ApusError, IndexCorruptError

REBUILD_FIX = (
    "apus memory index --force  (moves the damaged file aside and rebuilds the index "
    "from your notes)"
)


class IndexWriteError(ApusError):
    """The index could not be written: a full disk, an I/O error, a read-only folder."""


def _user_error(exc: sqlite3.Error, path: Path) -> ApusError | None:
    """The ApusError that says what an SQLite error means for the user; None for the
    errors that are the code's own (a wrong query), which stay tracebacks."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF  # extended codes keep it in the low byte
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return IndexCorruptError(f"The index database {path} is damaged ({exc}).", REBUILD_FIX)
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


def raise_for_user(exc: sqlite3.Error, path: Path) -> NoReturn:
    error = _user_error(exc, path)
    if error is None:
        raise exc
    raise error from exc


class _Cursor(sqlite3.Cursor):
    """A cursor whose damaged-file, full-disk and I/O errors are ApusErrors: a damaged page
    can be met by any query, and rows are read lazily, so every entry point translates."""

    connection: Connection

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise_for_user(exc, self.connection.store_path)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> _Cursor:
        try:
            return super().executemany(sql, seq_of_parameters)
        except sqlite3.Error as exc:
            raise_for_user(exc, self.connection.store_path)

    def executescript(self, sql_script: str, /) -> _Cursor:
        try:
            super().executescript(sql_script)  # returns this cursor, typed as a plain one
        except sqlite3.Error as exc:
            raise_for_user(exc, self.connection.store_path)
        return self

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise_for_user(exc, self.connection.store_path)

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise_for_user(exc, self.connection.store_path)

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            raise_for_user(exc, self.connection.store_path)


class Connection(sqlite3.Connection):
    """sqlite3.Connection with _Cursor everywhere (its shortcuts and commit included)."""

    store_path: Path

    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        return _Cursor(self).execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> _Cursor:
        return _Cursor(self).executemany(sql, parameters)

    def executescript(self, sql_script: str, /) -> _Cursor:
        return _Cursor(self).executescript(sql_script)

    def commit(self) -> None:
        try:
            super().commit()
        except sqlite3.Error as exc:
            raise_for_user(exc, self.store_path)

    def __exit__(self, *exc_info: Any) -> Any:
        try:
            return super().__exit__(*exc_info)
        except sqlite3.Error as exc:
            raise_for_user(exc, self.store_path)


def connect(path: Path, *, readonly: bool) -> Connection:
    if not readonly:
        db = sqlite3.connect(path, check_same_thread=False, factory=Connection)
        db.store_path = path
        return db
    db = _read_only(path)
    try:  # the plain connection's execute: its error as SQLite gives it
        sqlite3.Connection.execute(db, "PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code not in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL):
            return db  # the query that meets it again says what it is
        # A reader of a WAL database makes the shared-memory file beside it, which a full
        # disk (or a read-only folder) refuses: read the database file as it is instead,
        # the state of its last checkpoint. Searching never needs free space.
        db.close()
        db = _read_only(path, immutable=True)
    return db


def _read_only(path: Path, *, immutable: bool = False) -> Connection:
    uri = f"{path.resolve().as_uri()}?mode=ro" + ("&immutable=1" if immutable else "")
    db = sqlite3.connect(uri, uri=True, check_same_thread=False, factory=Connection)
    db.store_path = path
    return db


def damage_reason(path: Path, *, thorough: bool) -> str | None:
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


def move_aside(path: Path) -> Path:
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
