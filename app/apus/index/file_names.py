"""The names table: which notes a query names by path, file name or stem, kept in the store.

A query that names a note (`roadmap`, `roadmap.md`, `projects/roadmap.md`) brings that note
in whatever its words score. Folding every path to find it costs a new process a pass over
all files; the store keeps the folded names instead (`file_names`), written with each file,
so a search asks one indexed SELECT.
"""

from __future__ import annotations

import sqlite3

from apus.vault.text import fold

# The SQL function the migration that creates the table backfills it with: key 0, 1 or 2
# of `name_keys(path)` a call.
SQL_FUNCTION = "apus_name_key"


def name_keys(path: str) -> tuple[str, str, str]:
    """The keys a note answers to: its folded path, file name and stem (`a/b.md`: `a/b.md`,
    `b.md`, `b`). Only the last suffix is dropped: `notes.tar.gz` has the stem `notes.tar`."""
    folded = fold(path)
    base = folded.rsplit("/", 1)[-1]
    return folded, base, base.rsplit(".", 1)[0]


def _name_key(path: str, part: int) -> str:
    return name_keys(path)[part]


def register(db: sqlite3.Connection) -> None:
    """Make `apus_name_key(path, part)` callable on `db` (the backfilling migration uses it)."""
    db.create_function(SQL_FUNCTION, 2, _name_key, deterministic=True)


def write(db: sqlite3.Connection, file_id: int, path: str) -> None:
    """Record the names of file `file_id` (a file's old names go with its row, or `forget`)."""
    db.executemany(
        "INSERT OR IGNORE INTO file_names(key, file_id) VALUES (?, ?)",
        [(key, file_id) for key in set(name_keys(path))],
    )


def forget(db: sqlite3.Connection, file_id: int) -> None:
    db.execute("DELETE FROM file_names WHERE file_id = ?", (file_id,))


def files_named(db: sqlite3.Connection, key: str) -> list[int]:
    """Ids of the files whose path, file name or stem is `key` (folded, as `name_keys`)."""
    rows = db.execute("SELECT file_id FROM file_names WHERE key = ? ORDER BY file_id", (key,))
    return [int(row[0]) for row in rows]
