"""The store's side of a forced rebuild: copies between the live database and the new one.

The new database carries on from the live one (`continue_from`), the embedding cache of one
that did not finish is kept (`salvage_cache`), and the live database becomes a copy of the
complete new one in one write transaction (`replace_contents`). The steps around them, and
why readers never see a mix, are `apus.indexing.shadow`'s.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from apus.errors import ApusError
from apus.index.set_aside import SET_ASIDE_KEY
from apus.index.sqlite import Connection, raise_for_user
from apus.index.store import HIGHEST_CHUNK_KEY, Store


def continue_from(shadow: Store, live: Path) -> None:
    """Make the new, empty `shadow` database carry on from the live one at `live`, which it
    is built to replace: the embedding cache (text already embedded is never embedded
    again), the record of a damaged database set aside, the chunk-id counter (an id is never
    given to another text, even across the swap) and the generation (readers see it move
    on)."""
    db = shadow.connection
    with _attached(db, live, "live"), db:
        _copy_cache(db, "live", "main")
        db.execute(
            "INSERT OR REPLACE INTO main.meta(key, value) "
            "SELECT key, value FROM live.meta WHERE key = ?",
            (SET_ASIDE_KEY,),
        )
        row = db.execute("SELECT MAX(id) FROM live.chunks").fetchone()
        given = db.execute(
            "SELECT value FROM live.meta WHERE key = ?", (HIGHEST_CHUNK_KEY,)
        ).fetchone()
        highest = max(int(row[0] or 0), int(given[0]) if given else 0)
        shadow.set_meta(HIGHEST_CHUNK_KEY, str(highest))
        generation = db.execute("SELECT value FROM live.meta WHERE key = 'generation'").fetchone()
        shadow.set_meta("generation", str(int(generation[0] if generation else 0) + 1))


def salvage_cache(store: Store, other: Path) -> None:
    """Copy the embedding cache of the half-built database at `other` into `store`, if it can
    be read at all (a run killed while creating it leaves one that cannot): what was
    embedded there is not embedded again."""
    db = store.connection
    try:
        with _attached(db, other, "other"), db:
            _copy_cache(db, "other", "main")
    except (sqlite3.Error, ApusError):  # unreadable, no schema yet, or no room: skipped
        return


def replace_contents(live: Store, source: Store) -> None:
    """Make the `live` database a copy of `source` in one write transaction (SQLite's backup
    API): a reader, however long it has held its connection, sees the old content or the
    new, never a mix, and a run killed half-way leaves the old one whole."""
    try:
        source.connection.backup(live.connection)
    except sqlite3.Error as exc:
        raise_for_user(exc, live.path)
    # The copy sits in the WAL until a checkpoint: fold it into the file, shrink the WAL.
    live.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


@contextmanager
def _attached(db: Connection, path: Path, name: str) -> Iterator[None]:
    """The database at `path` as schema `name` of `db`, for one copy."""
    db.execute(f"ATTACH DATABASE ? AS {name}", (str(path),))
    try:
        yield
    finally:
        db.execute(f"DETACH DATABASE {name}")


def _copy_cache(db: Connection, source: str, target: str) -> None:
    db.execute(
        f"INSERT OR IGNORE INTO {target}.embedding_cache(key, dims, vector, created) "
        f"SELECT key, dims, vector, created FROM {source}.embedding_cache"
    )
