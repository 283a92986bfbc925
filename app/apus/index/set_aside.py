"""A damaged database set aside: found, moved out of the way, and recorded in the new store.

The notes are the truth the database was derived from, so a damaged one is never repaired in
place: it is moved aside (with its -wal and -shm) and an empty store is filled from the notes.
The empty store's meta records where the damaged one went and why, for status and doctor.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from apus.index.sqlite import damage_reason, move_aside
from apus.index.store import Store

# What a store's meta records of the database it replaced: where it went, and why.
SET_ASIDE_KEY = "store.set_aside"


@dataclass(frozen=True)
class SetAside:
    """A damaged database moved out of the way; the next open starts an empty store."""

    moved_to: Path
    reason: str


def set_aside_if_damaged(index_dir: Path, *, thorough: bool = False) -> SetAside | None:
    """Move a damaged database aside; the caller then opens an empty store and fills it from
    the notes.

    Always checked: that the database opens and its schema reads (a garbled header).
    `thorough` adds `PRAGMA quick_check`, which reads every page (a truncated file, a garbled
    page in the middle). Call it holding the writer lock. Returns what was moved and why,
    also recorded in the new store's meta (`recorded_set_aside`).
    """
    path = index_dir / Store.FILENAME
    if not path.is_file():
        return None
    reason = damage_reason(path, thorough=thorough)
    if reason is None:
        return None
    moved = SetAside(move_aside(path), reason)
    fresh = Store(index_dir)
    try:
        with fresh.transaction():
            fresh.set_meta(
                SET_ASIDE_KEY,
                json.dumps({"moved_to": str(moved.moved_to), "reason": reason, "at": time.time()}),
            )
            # A generation the derived indexes cannot already carry: they are rebuilt.
            fresh.set_meta("generation", str(time.time_ns()))
    finally:
        fresh.close()
    return moved


def damage_of(index_dir: Path) -> str | None:
    """Why the database is damaged (`PRAGMA quick_check` included), or None; moves nothing."""
    path = index_dir / Store.FILENAME
    return damage_reason(path, thorough=True) if path.is_file() else None


def recorded_set_aside(store: Store) -> SetAside | None:
    """The damaged database `store` replaced, if it replaced one."""
    raw = store.get_meta(SET_ASIDE_KEY)
    if not raw:
        return None
    record = json.loads(raw)
    return SetAside(Path(record["moved_to"]), str(record["reason"]))
