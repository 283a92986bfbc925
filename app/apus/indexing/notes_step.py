"""The notes step of a sync: each new or touched note read, parsed, chunked and written through
the writer batch by batch; then the vanished ones removed and the step's record kept.

A failure inside one note is caught at that note (`NOTE_FAILURES`): it is skipped with its
reason and fix, its old version dropped, and the rest of the vault goes on.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

from apus.config import Settings
from apus.index.media import is_media_path
from apus.index.note_filter import fold_tag
from apus.index.note_problems import (
    FRONTMATTER_FIX,
    NOTE_FAILURES,
    NOTE_FIX,
    NoteProblem,
    failure_reason,
    save_problems,
)
from apus.index.store import NewFile
from apus.indexing.media import media_new_file, read_media
from apus.indexing.progress import Eta, ProgressCallback, SyncProgress
from apus.indexing.run import Change, SyncCancelled, SyncRun
from apus.indexing.writers import BATCH_FILES, NoteWriter, TitleAndDates
from apus.vault.chunk import iter_chunks
from apus.vault.dates import date_from_path
from apus.vault.language import note_language
from apus.vault.markdown import ParsedNote, parse_note
from apus.vault.memory_notes import is_entry_note
from apus.vault.scan import ScannedFile, read_note_text


class NotesStep:
    """Carries out the notes part of a sync's plan (`run.plan`) through `writer`."""

    def __init__(
        self,
        settings: Settings,
        run: SyncRun,
        writer: NoteWriter,
        emit: ProgressCallback,
        cancel: threading.Event | None,
    ) -> None:
        self.settings = settings
        self.run = run
        self.writer = writer
        self.emit = emit
        self.cancel = cancel

    def read_changed(self) -> None:
        """Read each new or touched file; write what changed, batch by batch."""
        eta = Eta()
        to_read = self.run.plan.to_read
        total = len(to_read)
        for done, scanned in enumerate(to_read, start=1):
            self._stop_if_cancelled()
            try:
                self._read_one(scanned)
            except NOTE_FAILURES as exc:
                self._failed(scanned, exc)
            if self.writer.pending() >= BATCH_FILES:
                self.writer.flush()
            if done % 50 == 0 or done == total:
                self.emit(SyncProgress("index", done, total, eta(done, total)))
        self._stop_if_cancelled()
        self.writer.flush()

    def remove_gone(self) -> None:
        """Drop vanished and now-unreadable files; record the skip list, the problems and
        the sync's time."""
        run, store = self.run, self.writer.store
        vanished = run.vanished()
        stale = self.writer.stale_ids(vanished)
        with store.transaction():
            if stale:
                store.delete_files(stale)
            store.replace_skipped((s.rel_path, s.reason) for s in run.skipped)
            for record in vanished:
                run.forget_problem(record.path)
            save_problems(store, run.problems.values())
            store.set_meta("vault", str(self.settings.vault_path()))
            store.set_meta("last_sync", str(time.time()))
            store.set_meta("chunking", run.plan.signature)
            generation = store.bump_generation() if stale else store.generation()
        run.removed_vanished(len(vanished))
        mirror = self.writer.keyword_mirror()
        if stale and mirror is not None:
            mirror(stale, [], generation)

    def _stop_if_cancelled(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise SyncCancelled

    def _read_one(self, scanned: ScannedFile) -> None:
        run, writer = self.run, self.writer
        media = is_media_path(scanned.rel_path)
        note = (
            read_media(scanned)
            if media
            else read_note_text(
                scanned.abs_path,
                max_file_bytes=self.settings.search.sync.max_file_bytes,
                expected_identity=scanned.identity,
            )
        )
        previous = run.plan.known.get(scanned.rel_path)
        if note.text is None:
            run.forget_problem(scanned.rel_path)
            run.skip(scanned.rel_path, note.skip_reason or "unreadable")
            if previous is not None:
                writer.drop(previous)
            return
        if (
            previous is not None
            and previous.sha256 == note.sha256
            and previous.chunking == run.plan.signature_of(scanned.rel_path)
            and writer.touch(previous, scanned)
        ):
            return  # touched, not changed
        # A renamed media file is indexed anew (its description names its path); its vector
        # comes back from the cache, which is keyed by content.
        origin = run.take_renamed(note.sha256) if previous is None and not media else None
        if origin is not None:
            run.moved(origin.path, scanned.rel_path)
            if writer.rename(origin, scanned, _name_facts(scanned, note.text)):
                return
        run.forget_problem(scanned.rel_path)
        change: Change = "added"
        if previous is not None:
            change = "changed"
        elif origin is not None:
            change = "renamed"  # a rebuild writes it whole under its new name
        writer.add(
            media_new_file(scanned, note, run.plan.signature)
            if media
            else self._prepare(scanned, note.text, note.sha256, note.replaced_invalid_utf8),
            change,
            previous or origin,
        )

    def _prepare(self, scanned: ScannedFile, text: str, sha256: str, replaced: bool) -> NewFile:
        chunking = self.settings.search.chunking
        plan = self.run.plan
        note = parse_note(text, fallback_title=Path(scanned.rel_path).stem)
        # Made while the store writes them (apus.vault.chunk): a huge note's chunks are never
        # all held at once. A failure while chunking surfaces there, caught at this note.
        entries = plan.entries and is_entry_note(scanned.rel_path)
        chunks = iter_chunks(
            note, max_tokens=chunking.tokens, overlap=chunking.overlap, entries=entries
        )
        facts = _facts(scanned, note)
        if note.problems:
            self.run.found_problem(
                NoteProblem(scanned.rel_path, "; ".join(note.problems), FRONTMATTER_FIX, True)
            )
        return NewFile(
            path=scanned.rel_path,
            size=scanned.size,
            mtime_ns=scanned.mtime_ns,
            sha256=sha256,
            title=note.title,
            note_date=facts.note_date,
            importance=note.meta.importance,
            triggers=note.meta.triggers,
            chunking=plan.signature_of(scanned.rel_path),
            replaced_utf8=replaced,
            chunks=chunks,
            tags=tuple(dict.fromkeys(fold_tag(tag) for tag in note.meta.tags)),
            dated=facts.dated,
            lang=note_language(note.body),
        )

    def _failed(self, scanned: ScannedFile, exc: BaseException) -> None:
        """A note that raised while read, parsed or chunked: skipped, its old version
        dropped, the reason and fix recorded; the rest of the vault goes on."""
        reason = failure_reason(exc)
        path = scanned.rel_path
        self.run.skip(path, reason, NoteProblem(path, reason, NOTE_FIX, False))
        previous = self.run.plan.known.get(path)
        if previous is not None:
            self.writer.drop(previous)


def _facts(scanned: ScannedFile, note: ParsedNote) -> TitleAndDates:
    name_date = date_from_path(scanned.rel_path)
    note_date = name_date.isoformat() if name_date else None
    modified = dt.datetime.fromtimestamp(scanned.mtime_ns / 1e9).date().isoformat()
    return TitleAndDates(note.title, note_date, note_date or note.meta.date or modified)


def _name_facts(scanned: ScannedFile, text: str) -> TitleAndDates:
    """A renamed note keeps its chunks; what the new name says (title, dates) follows it."""
    return _facts(scanned, parse_note(text, fallback_title=Path(scanned.rel_path).stem))
