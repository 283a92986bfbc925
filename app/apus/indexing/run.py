"""One sync as it runs: what its notes step has done, collected beside its unchanging plan,
and how it is stopped (`SyncCancelled`).

Notes are counted as added, changed, renamed, unchanged or removed when the transaction that
writes them commits, so a note the store refuses, or one still queued when a sync is
stopped, is never counted; skipped notes and problems start from the plan's and change as
notes are read.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from apus.index.note_problems import NoteProblem
from apus.index.store import FileRecord
from apus.indexing.plan import KeywordWay, SyncPlan
from apus.vault.scan import SkippedFile

# What writing a note did to the store: a new note, a new version of a stored one, or a
# stored one under its new name.
Change = Literal["added", "changed", "renamed"]


class SyncCancelled(Exception):
    """Raised inside the sync when its cancel event is set."""


class SyncRun:
    """One sync's notes step as it goes: what was written (counted at commit), what was
    skipped and why, the vanished notes found renamed, and how the keyword index is kept (the
    plan's way, until a write to it fails: then it is rebuilt from the store at the end)."""

    def __init__(self, plan: SyncPlan) -> None:
        self.plan = plan
        self.keyword: KeywordWay = plan.keyword
        self.skipped: list[SkippedFile] = list(plan.skipped)
        # Those of the last sync, less the notes this one reads again or finds gone, plus
        # what it finds (saved when the notes step ends; a rename moves one).
        self.problems: dict[str, NoteProblem] = dict(plan.problems)
        self.counts: dict[Change, int] = {"added": 0, "changed": 0, "renamed": 0}
        self.unchanged = plan.unchanged
        self.removed = 0  # vanished notes deleted from the store
        self._renamed_from: set[str] = set()  # paths of vanished notes found renamed

    def committed(self, changes: list[Change]) -> None:
        """Notes a transaction that has just committed wrote."""
        for change in changes:
            self.counts[change] += 1

    def removed_vanished(self, count: int) -> None:
        """The vanished notes, deleted by a transaction that has just committed."""
        self.removed += count

    def touched(self) -> None:
        """A note whose size or time changed, not its text: its new ones are committed."""
        self.unchanged += 1

    def keyword_failed(self) -> None:
        """A write to the keyword index failed: it is rebuilt from the store at the end."""
        self.keyword = "rebuild"

    def take_renamed(self, sha256: str) -> FileRecord | None:
        """A vanished note with this content, not found renamed yet: the note read is it,
        renamed."""
        for record in reversed(self.plan.gone_by_sha.get(sha256, ())):
            if record.path not in self._renamed_from:
                self._renamed_from.add(record.path)
                return record
        return None

    def vanished(self) -> list[FileRecord]:
        """The stored notes gone from disk, less those found renamed."""
        return [r for path, r in self.plan.gone.items() if path not in self._renamed_from]

    def skip(self, path: str, reason: str, problem: NoteProblem | None = None) -> None:
        """A note left out of the index, and the problem it is listed with, if any."""
        self.skipped.append(SkippedFile(path, reason))
        if problem is not None:
            self.problems[path] = problem

    def found_problem(self, problem: NoteProblem) -> None:
        self.problems[problem.path] = problem

    def forget_problem(self, path: str) -> None:
        """The note at `path` is read again, or gone: its old problem no longer stands."""
        self.problems.pop(path, None)

    def moved(self, old: str, new: str) -> None:
        """A renamed note's problem follows it."""
        moved = self.problems.pop(old, None)
        if moved is not None:
            self.problems[new] = dataclasses.replace(moved, path=new)
