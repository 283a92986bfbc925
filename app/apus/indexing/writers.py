"""The writers of a sync's notes: in place, or into the shadow store of a forced rebuild.

Both write notes in batches, one transaction each, and count what each batch wrote once it
commits (`SyncRun.committed`). In place (`LiveWriter`), a note whose text did not change is
only touched, a renamed note keeps its chunks, and each committed batch is mirrored into the
keyword index. A forced rebuild (`ShadowWriter`) writes every note again into a new store
beside the live one, reusing the live chunk ids of unchanged text; its keyword index is
built once, at the end.
"""

from __future__ import annotations

import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace

from apus.index.keyword import KeywordIndex
from apus.index.note_problems import NOTE_FAILURES, NOTE_FIX, NoteProblem, failure_reason
from apus.index.store import ChunkRecord, FileRecord, NewFile, Store
from apus.indexing.progress import Eta, ProgressCallback, SyncProgress, ignore_progress
from apus.indexing.run import Change, SyncRun
from apus.vault.chunk import Chunk
from apus.vault.scan import ScannedFile

# Files written per SQLite transaction: a killed run loses at most one batch of work.
BATCH_FILES = 500
# A first index mirrors its first batch into the keyword index at once, then waits for
# sixteen times as many files each time: searchable from the first batch, yet only about
# log16(files / 500) segments, which every later search reads term by term until updates
# merge them. Measured on 115k pages (a first index of tldr x3, 300 queries, end-to-end
# keyword search against FTS5 over the same chunks, CPU p50): growing by 2 leaves 8 segments,
# 2.30x; by 4, 5 segments, 2.08x; by 8, 4, 2.00x; by 16, 3 segments, 1.90x (one: 1.86x).
_FIRST_MIRROR_FILES = BATCH_FILES
_MIRROR_GROWTH = 16
# A note this large reports its own progress while its chunks are made and written
# (with a raised maxFileBytes that can take minutes), every this many chunks.
_LARGE_NOTE_BYTES = 8 * 1024 * 1024
_LARGE_NOTE_EVERY = 1000

# A committed change applied to the keyword index: the files whose chunks go, the chunks
# that come, and the store generation they bring it to.
KeywordMirror = Callable[[list[int], Iterable[ChunkRecord], int], None]


@dataclass(frozen=True)
class TitleAndDates:
    """What a note's name and text say about it beyond its chunks."""

    title: str
    note_date: str | None  # from the file name: recency decay
    dated: str | None  # file name, else frontmatter `date`, else modification day: filters


@dataclass(frozen=True)
class _Queued:
    new: NewFile
    change: Change
    source: FileRecord | None  # the stored file it replaces or was renamed from


class NoteWriter(ABC):
    """What the notes step writes through: notes queued and written a batch at a time.

    The two writers differ only in what each method below does; the notes step never asks
    which one it has.
    """

    def __init__(self, store: Store, run: SyncRun, emit: ProgressCallback) -> None:
        self.store = store
        self.run = run
        self.emit = emit
        self._queued: list[_Queued] = []

    def add(self, new: NewFile, change: Change, source: FileRecord | None) -> None:
        """Queue a note to write; `source` is the stored file it replaces or was renamed from."""
        self._queued.append(_Queued(new, change, source))

    def pending(self) -> int:
        return len(self._queued)

    @abstractmethod
    def touch(self, previous: FileRecord, scanned: ScannedFile) -> bool:
        """A stored note whose text and chunking are unchanged: keep it, with the size and
        time the scan found, so the next scan skips it. False: write it anyway."""

    @abstractmethod
    def rename(self, origin: FileRecord, scanned: ScannedFile, facts: TitleAndDates) -> bool:
        """A stored note found under a new name, its text unchanged: keep its chunks, and
        let what the name says (title, dates) follow it. False: write it as a new note."""

    @abstractmethod
    def drop(self, previous: FileRecord) -> None:
        """A stored note that can no longer be indexed: its old version goes."""

    @abstractmethod
    def stale_ids(self, vanished: list[FileRecord]) -> list[int]:
        """The ids of the files to delete from the store: the vanished ones and those
        dropped."""

    @abstractmethod
    def flush(self) -> None:
        """Write what is queued in one transaction."""

    @abstractmethod
    def mirror_grown(self) -> None:
        """A first index: add to the keyword index the notes committed since it last grew."""

    def keyword_mirror(self) -> KeywordMirror | None:
        """How later committed changes (transcripts, removals) reach the keyword index, or
        None when it is built from the store at the end."""
        return None

    def _write_note(self, new: NewFile, reuse_ids: list[int | None] | None = None) -> int | None:
        """Add one note inside the batch's transaction; a note the database refuses (a value
        it cannot bind, a constraint) is undone alone and skipped, with the reason."""
        if new.size >= _LARGE_NOTE_BYTES:
            new = replace(new, chunks=_reporting(new.chunks, new.size, self.emit))
        try:
            with self.store.savepoint():
                return self.store.add_file(new, reuse_ids)[0]
        except NOTE_FAILURES as exc:
            reason = failure_reason(exc)
            where = " when written to the index" if isinstance(exc, sqlite3.Error) else ""
            problem = NoteProblem(new.path, f"{reason}{where}", NOTE_FIX, False)
            self.run.skip(new.path, reason, problem)
            previous = self.run.plan.known.get(new.path)
            if previous is not None:
                self.drop(previous)  # its old text is no longer the note's
            return None


class LiveWriter(NoteWriter):
    """Writes changes into the live store, and mirrors each committed batch into the keyword
    index (a first index grows it by stretches of batches instead).

    A keyword write that fails after the store committed only means the keyword index is
    rebuilt from the store at the end of the sync (`SyncRun.keyword_failed`): nothing is lost.
    """

    def __init__(
        self,
        store: Store,
        keyword: KeywordIndex,
        run: SyncRun,
        emit: ProgressCallback = ignore_progress,
    ) -> None:
        super().__init__(store, run, emit)
        self.keyword = keyword
        self._renames: list[tuple[FileRecord, ScannedFile, TitleAndDates]] = []
        self._dropped: list[int] = []
        # Growing a first index: files committed to the store, not yet in the keyword index,
        # and how many to gather before the next keyword commit (grows each time).
        self._unmirrored: list[int] = []
        self._mirror_at = _FIRST_MIRROR_FILES

    def pending(self) -> int:
        return super().pending() + len(self._renames)

    def touch(self, previous: FileRecord, scanned: ScannedFile) -> bool:
        with self.store.transaction():
            self.store.touch_file(previous.id, scanned.size, scanned.mtime_ns)
        self.run.touched()
        return True

    def rename(self, origin: FileRecord, scanned: ScannedFile, facts: TitleAndDates) -> bool:
        self._renames.append((origin, scanned, facts))
        return True

    def drop(self, previous: FileRecord) -> None:
        self._dropped.append(previous.id)

    def stale_ids(self, vanished: list[FileRecord]) -> list[int]:
        return self._dropped + [record.id for record in vanished]

    def flush(self) -> None:
        if not self.pending():
            return
        store = self.store
        changes: list[Change] = []
        with store.transaction():
            ids: list[int] = []
            for record, scanned, facts in self._renames:
                store.rename_file(
                    record.id,
                    scanned.rel_path,
                    scanned.size,
                    scanned.mtime_ns,
                    title=facts.title,
                    note_date=facts.note_date,
                    dated=facts.dated,
                )
                ids.append(record.id)
                changes.append("renamed")
            replaced: list[int] = []
            for queued in self._queued:
                file_id = self._write_note(queued.new)
                if file_id is not None:
                    ids.append(file_id)
                    changes.append(queued.change)
                    if queued.source is not None:
                        replaced.append(queued.source.id)
            generation = store.bump_generation()
        self.run.committed(changes)
        if self.run.keyword == "grow":
            self._unmirrored.extend(ids)
            if len(self._unmirrored) >= self._mirror_at:
                self.mirror_grown()
        elif self.run.keyword == "update":
            # Read back lazily: Whoosh takes them one by one (its writer's pool is bounded).
            renamed = [record.id for record, _, _ in self._renames]
            self.mirror(replaced + renamed, store.iter_chunks(ids), generation)
        self._queued, self._renames = [], []

    def mirror_grown(self) -> None:
        if not self._unmirrored or self.run.keyword == "rebuild":
            return
        ids, self._unmirrored = self._unmirrored, []
        self._mirror_at *= _MIRROR_GROWTH
        chunks = _telling_files(self.store.iter_chunks(ids), len(ids), self.emit)
        generation = self.store.generation()
        self._keyword_write(lambda: self.keyword.grow(add_chunks=chunks, generation=generation))

    def keyword_mirror(self) -> KeywordMirror | None:
        return None if self.run.keyword == "rebuild" else self.mirror

    def mirror(self, remove: list[int], add: Iterable[ChunkRecord], generation: int) -> None:
        self._keyword_write(
            lambda: self.keyword.apply(
                remove_file_ids=remove, add_chunks=add, generation=generation
            )
        )

    def _keyword_write(self, write: Callable[[], None]) -> None:
        """A keyword index write; one that fails turns the sync into a keyword rebuild."""
        try:
            write()
        except Exception:  # damage that opening did not show (Whoosh raises many types)
            self.run.keyword_failed()


class ShadowWriter(NoteWriter):
    """Writes a forced rebuild into the shadow store, beside the live one (apus.indexing.shadow).

    Every note is written again, and every chunk whose text is unchanged keeps the id it has
    in the live store: a reader that pairs the new store with the old keyword index or FAISS
    for a moment while they are swapped still finds it. Nothing is dropped or removed: the
    shadow never held the live store's files.
    """

    def __init__(
        self,
        shadow: Store,
        live: Store,
        run: SyncRun,
        emit: ProgressCallback = ignore_progress,
    ) -> None:
        super().__init__(shadow, run, emit)
        self.live = live

    def touch(self, previous: FileRecord, scanned: ScannedFile) -> bool:
        return False

    def rename(self, origin: FileRecord, scanned: ScannedFile, facts: TitleAndDates) -> bool:
        return False

    def drop(self, previous: FileRecord) -> None:
        return None

    def stale_ids(self, vanished: list[FileRecord]) -> list[int]:
        return []

    def mirror_grown(self) -> None:
        return None  # its keyword index is built once, at the end

    def flush(self) -> None:
        if not self._queued:
            return
        sources = [queued.source.id for queued in self._queued if queued.source is not None]
        live_chunks: dict[int, list[ChunkRecord]] = {}
        for chunk in self.live.iter_chunks(sources):
            live_chunks.setdefault(chunk.file_id, []).append(chunk)
        changes: list[Change] = []
        with self.store.transaction():
            for queued in self._queued:
                new, source = queued.new, queued.source
                before = live_chunks.get(source.id, []) if source is not None else []
                if before:  # matched against the live chunks, then written: made once
                    new = replace(new, chunks=list(new.chunks))
                if self._write_note(new, _reusable_ids(new, before)) is not None:
                    changes.append(queued.change)
            self.store.bump_generation()
        self.run.committed(changes)
        self._queued = []


def _telling_files(
    chunks: Iterable[ChunkRecord], files: int, emit: ProgressCallback
) -> Iterator[ChunkRecord]:
    """`chunks` (of `files` notes, note by note) as the keyword index takes them, telling
    how many notes it holds so far: the last stretch of a first index is most of the vault,
    and writing it takes a while after the last note is read."""
    eta = Eta()
    emit(SyncProgress("keyword", 0, files))
    done, last = 0, None
    for chunk in chunks:
        if chunk.file_id != last:
            if last is not None:
                done += 1
                if done % BATCH_FILES == 0:
                    emit(SyncProgress("keyword", done, files, eta(done, files)))
            last = chunk.file_id
        yield chunk
    emit(SyncProgress("keyword", files, files))


def _reporting(chunks: Iterable[Chunk], size: int, emit: ProgressCallback) -> Iterator[Chunk]:
    """`chunks` of one large note, telling how far through its text they have come."""
    eta = Eta()
    done = 0
    emit(SyncProgress("large", 0, size))
    for count, chunk in enumerate(chunks, start=1):
        done += len(chunk.text)
        if count % _LARGE_NOTE_EVERY == 0:
            emit(SyncProgress("large", min(done, size), size, eta(done, size)))
        yield chunk
    emit(SyncProgress("large", size, size))


def _reusable_ids(new: NewFile, before: list[ChunkRecord]) -> list[int | None] | None:
    """The live ids of `new`'s chunks whose text (and note title, which the embedded text
    carries) is unchanged; None for the others, which get fresh ids."""
    if not before or before[0].title != new.title:
        return None
    ids_by_text: dict[str, list[int]] = {}
    for chunk in before:
        ids_by_text.setdefault(chunk.text, []).append(chunk.id)
    return [
        ids_by_text[chunk.text].pop(0) if ids_by_text.get(chunk.text) else None
        for chunk in new.chunks
    ]
