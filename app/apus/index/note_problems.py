"""Notes that one sync could not index whole: why, and what the user can do about it.

A failure inside one note (a frontmatter value no reader expected, a chunker error, a value
the store refuses) is caught at that note: the note is indexed without the bad field, or
skipped, and the rest of the vault is indexed. What happened is kept in the store's meta
(`note.problems`) so every process's `memory status` and `apus doctor` list it until the
note is fixed: a note indexed with a problem is not read again until it changes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from apus.index.store import Store

_META_KEY = "note.problems"

FRONTMATTER_FIX = (
    "correct or remove that value in the note's frontmatter; the rest of the note is indexed"
)
NOTE_FIX = (
    "check the note for what the reason names (or move it out of the vault); the rest of "
    "the vault is indexed, and the note is tried again when it changes"
)


# What one note's content or values can raise while it is read, chunked or written: caught
# at that note. Errors of the index itself (a full disk, a damaged database: ApusErrors) and
# cancellation still stop the sync.
NOTE_FAILURES = (
    ValueError,
    TypeError,
    OverflowError,
    RecursionError,
    ArithmeticError,
    LookupError,
    AttributeError,
    sqlite3.InterfaceError,
    sqlite3.IntegrityError,
    sqlite3.DataError,
    sqlite3.ProgrammingError,
)


@dataclass(frozen=True)
class NoteProblem:
    """One note's failure: `indexed` when the note is searchable without the bad part."""

    path: str
    reason: str
    fix: str
    indexed: bool

    def as_dict(self) -> dict[str, object]:
        return {"path": self.path, "reason": self.reason, "fix": self.fix, "indexed": self.indexed}


def failure_reason(exc: BaseException) -> str:
    """A short reason for an exception raised while indexing one note."""
    text = str(exc)
    if len(text) > 160:
        text = text[:159] + "…"
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"could not be indexed ({detail})"


def load_problems(store: Store) -> dict[str, NoteProblem]:
    """The problems the last sync recorded, by path (none when the meta is unreadable)."""
    raw = store.get_meta(_META_KEY)
    if not raw:
        return {}
    try:
        items = json.loads(raw)
        problems = [
            NoteProblem(str(i["path"]), str(i["reason"]), str(i["fix"]), bool(i["indexed"]))
            for i in items
        ]
    except (ValueError, KeyError, TypeError):
        return {}
    return {problem.path: problem for problem in problems}


def save_problems(store: Store, problems: Iterable[NoteProblem]) -> None:
    """Replace the recorded problems (inside the caller's transaction)."""
    items = [p.as_dict() for p in sorted(problems, key=lambda p: p.path)]
    if items or store.get_meta(_META_KEY):
        # ASCII-escaped: a lone surrogate in a reason still stores.
        store.set_meta(_META_KEY, json.dumps(items))
