"""The Indexer: one sync of a vault, scan → plan → chunk and write → keyword → embed.

Keyword data is committed in batches before embedding starts, so search by words is correct
as soon as the keyword step ends; the embedding step then runs with the session's provider.
A first index grows its keyword index as batches commit (an empty one is made at the start),
so a large vault answers by words within seconds, over the notes read so far.
Every batch is a transaction: a killed or cancelled run keeps what it committed and the next
run continues from there.

A forced run instead builds a whole new index beside the live one and swaps it in when it is
complete (apus.indexing.shadow), so search keeps answering from the old index meanwhile.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from apus.config import Settings
from apus.embed.providers import ProviderResolution
from apus.errors import VaultError
from apus.index.keyword import KeywordIndex
from apus.index.media import MEDIA_RULE, is_media_path
from apus.index.note_filter import fold_tag
from apus.index.note_problems import (
    FRONTMATTER_FIX,
    NOTE_FIX,
    NoteProblem,
    failure_reason,
    load_problems,
    save_problems,
)
from apus.index.sqlite import IndexWriteError
from apus.index.store import (
    ChunkRecord,
    FileRecord,
    NewFile,
    SetAside,
    Store,
)
from apus.indexing.embedding import EmbedOutcome, run_embedding
from apus.indexing.holds import hold_point, hold_progress
from apus.indexing.lock import WriterLock
from apus.indexing.media import admit_media, media_new_file, read_media
from apus.indexing.progress import Eta, ProgressCallback, SyncProgress, ignore_progress
from apus.indexing.reading_progress import ReadingProgressFile
from apus.indexing.request import SyncRequest
from apus.indexing.shadow import discard_leftover, open_shadow, shadow_dir, swap_in
from apus.indexing.transcripts import TranscriptReport, sync_transcripts
from apus.vault.chunk import CHUNKING_VERSION, Chunk, iter_chunks
from apus.vault.dates import date_from_path
from apus.vault.markdown import ParsedNote, parse_note
from apus.vault.scan import (
    ScanCancelled,
    ScannedFile,
    ScanResult,
    SkippedFile,
    read_note_text,
    scan_notes,
    scan_roots,
)

# Files written per SQLite transaction: a killed run loses at most one batch of work.
_BATCH_FILES = 500
# Above this many changed files a fresh keyword build is cheaper than incremental updates.
_REBUILD_THRESHOLD = 2000
# A first index mirrors its first batch into the keyword index at once, then waits for
# sixteen times as many files each time: searchable from the first batch, yet only about
# log16(files / 500) segments, which every later search reads term by term until updates
# merge them. Measured on 115k pages (a first index of tldr x3, 300 queries, end-to-end
# keyword search against FTS5 over the same chunks, CPU p50): growing by 2 leaves 8 segments,
# 2.30x; by 4, 5 segments, 2.08x; by 8, 4, 2.00x; by 16, 3 segments, 1.90x (one: 1.86x).
_FIRST_MIRROR_FILES = _BATCH_FILES
_MIRROR_GROWTH = 16
# A note this large reports its own progress while its chunks are made and written
# (with a raised maxFileBytes that can take minutes), every this many chunks.
_LARGE_NOTE_BYTES = 8 * 1024 * 1024
_LARGE_NOTE_EVERY = 1000
# The provider of a sync that only keeps keyword data (tests, benchmarks, `provider = none`).
KEYWORD_ONLY = ProviderResolution(None, "off", "provider is none")
# What one note's content or values can raise while it is read, chunked or written: caught
# at that note (apus.index.note_problems). Errors of the index itself (a full disk, a damaged
# database: ApusErrors) and cancellation still stop the sync.
_NOTE_FAILURES = (
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


@dataclass
class SyncReport:
    files: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    renamed: int = 0
    unchanged: int = 0
    chunks: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    # Notes indexed without a bad part, or skipped for a failure of their own, with the fix.
    problems: list[NoteProblem] = field(default_factory=list)
    keyword_rebuilt: bool = False
    cancelled: bool = False
    seconds: float = 0.0
    embedding: EmbedOutcome = field(default_factory=lambda: EmbedOutcome("off"))
    store_set_aside: SetAside | None = None  # a damaged database moved away and rebuilt
    sessions: TranscriptReport = field(default_factory=TranscriptReport)

    @property
    def embedded(self) -> int:
        return self.embedding.embedded

    @property
    def changed_anything(self) -> bool:
        """Whether search results may differ after this sync."""
        return bool(
            self.added
            or self.changed
            or self.removed
            or self.renamed
            or self.sessions.added
            or self.sessions.appended
            or self.sessions.reread
            or self.sessions.removed
            or self.keyword_rebuilt
            or self.embedded
        )

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["skipped"] = [{"path": s.rel_path, "reason": s.reason} for s in self.skipped]
        data["problems"] = [problem.as_dict() for problem in self.problems]
        data["embedded"] = self.embedded
        data["embed_error"] = self.embedding.message()
        problem = self.embedding.problem
        data["embedding"] = {
            "state": self.embedding.state,
            "reason": "" if problem is None else problem.reason,
            "fix": "" if problem is None else problem.fix,
            "vectors_rebuilt": self.embedding.vectors_rebuilt,
        }
        data["store_set_aside"] = (
            None
            if self.store_set_aside is None
            else {
                "moved_to": str(self.store_set_aside.moved_to),
                "reason": self.store_set_aside.reason,
            }
        )
        return data


class SyncCancelled(Exception):
    """Raised inside the sync when its cancel event is set."""


def chunking_signature(settings: Settings) -> str:
    chunking = settings.search.chunking
    return f"v{CHUNKING_VERSION}:{chunking.tokens}:{chunking.overlap}"


@dataclass
class SyncPlan:
    """What one sync will change, decided from the scan and the store before writing."""

    signature: str
    known: dict[str, FileRecord]  # the store's files by path
    to_read: list[ScannedFile]  # new, or changed size/mtime/chunking: read and compare
    gone: dict[str, FileRecord]  # in the store, not on disk (renamed ones leave this)
    gone_by_sha: dict[str, list[FileRecord]]  # `gone` by content, to spot renames
    skipped: list[SkippedFile]
    rebuild_keyword: bool
    unchanged: int
    # A first index: the keyword index starts empty and grows batch by batch (see
    # _BatchWriter), instead of being built once every note is read.
    grow_keyword: bool = False
    # Notes with a problem, by path: those of the last sync, less the notes this one reads
    # again or finds gone, plus what it finds (saved when the sync ends; a rename moves one).
    problems: dict[str, NoteProblem] = field(default_factory=dict)

    def take_renamed(self, sha256: str) -> FileRecord | None:
        """A vanished file with this content: the new path is that file renamed."""
        candidates = self.gone_by_sha.get(sha256)
        if not candidates:
            return None
        origin = candidates.pop()
        del self.gone[origin.path]
        return origin


def plan_sync(
    scan: ScanResult,
    store: Store,
    keyword: KeywordIndex,
    signature: str,
    *,
    force: bool,
    partial: bool = False,
) -> SyncPlan:
    """What a sync reads, removes and rebuilds. `partial`: `scan` lists some notes only (the
    session's own writes), so a note it does not list is not gone, and the skip list keeps
    what it says of the others."""
    seen = {scanned.rel_path for scanned in scan.files}
    if partial:  # the records of the listed notes are all it looks at
        found = (store.file_by_path(path) for path in seen)
        known = {record.path: record for record in found if record is not None}
    else:
        known = store.files(source="memory")  # transcripts are the transcript step's
    to_read: list[ScannedFile] = []
    unchanged = 0
    for scanned in scan.files:
        record = known.get(scanned.rel_path)
        if (
            record is not None
            and not force
            and record.size == scanned.size
            and record.mtime_ns == scanned.mtime_ns
            and record.chunking == signature
        ):
            unchanged += 1
        else:
            to_read.append(scanned)
    gone = {} if partial else {path: record for path, record in known.items() if path not in seen}
    skipped = list(scan.skipped)
    if partial:
        listed = seen | {s.rel_path for s in scan.skipped}
        kept = (SkippedFile(path, why) for path, why in store.skipped() if path not in listed)
        skipped.extend(kept)
    gone_by_sha: dict[str, list[FileRecord]] = {}
    for record in gone.values():
        gone_by_sha.setdefault(record.sha256, []).append(record)
    keyword_state = keyword.state()
    rebuild_keyword = (
        force
        or not keyword_state.usable
        or keyword_state.generation != store.generation()
        or len(to_read) > _REBUILD_THRESHOLD
    )
    # Nothing stored yet (a first index, or an index set aside as damaged): there is no old
    # keyword index worth serving meanwhile, so it grows from the first committed batch.
    grow_keyword = rebuild_keyword and not force and store.counts() == (0, 0)
    # A forced rebuild reads every note again and finds their problems anew.
    problems = {} if force else load_problems(store)
    return SyncPlan(
        signature,
        known,
        to_read,
        gone,
        gone_by_sha,
        skipped,
        rebuild_keyword and not grow_keyword,
        unchanged,
        grow_keyword=grow_keyword,
        problems=problems,
    )


class _BatchWriter:
    """Writes notes to the store in batches and mirrors each committed batch into Whoosh.

    A Whoosh failure after the store committed only means Whoosh is rebuilt from the store at
    the end of the sync (`plan.rebuild_keyword`), so nothing is lost.
    """

    # False: changes go into the live store; True: a forced rebuild fills a shadow store.
    rebuilding = False

    def __init__(
        self,
        store: Store,
        keyword: KeywordIndex,
        plan: SyncPlan,
        emit: ProgressCallback = ignore_progress,
    ) -> None:
        self.store = store
        self.keyword = keyword
        self.plan = plan
        self.emit = emit
        self.new: list[NewFile] = []
        self.renames: list[tuple[FileRecord, ScannedFile, _NoteFacts]] = []
        self.removed_ids: list[int] = []
        self.refused: list[str] = []  # paths of notes the store would not take
        # Growing a first index: files committed to the store, not yet in the keyword index,
        # and how many to gather before the next keyword commit (grows each time).
        self._unmirrored: list[int] = []
        self._mirror_at = _FIRST_MIRROR_FILES

    def write_note(self, new: NewFile, reuse_ids: list[int | None] | None = None) -> int | None:
        """Add one note inside the batch's transaction; a note the database refuses (a value
        it cannot bind, a constraint) is undone alone and skipped, with the reason."""
        if new.size >= _LARGE_NOTE_BYTES:
            new = replace(new, chunks=_reporting(new.chunks, new.size, self.emit))
        try:
            with self.store.savepoint():
                return self.store.add_file(new, reuse_ids)[0]
        except _NOTE_FAILURES as exc:
            self.refused.append(new.path)
            self.plan.skipped.append(SkippedFile(new.path, failure_reason(exc)))
            where = " when written to the index" if isinstance(exc, sqlite3.Error) else ""
            self.plan.problems[new.path] = NoteProblem(
                new.path, f"{failure_reason(exc)}{where}", NOTE_FIX, False
            )
            previous = self.plan.known.get(new.path)
            if previous is not None and not self.rebuilding:
                self.removed_ids.append(previous.id)  # its old text is no longer the note's
            return None

    def pending(self) -> int:
        return len(self.new) + len(self.renames)

    def add(self, new: NewFile, source: FileRecord | None) -> None:
        """Queue a note to write; `source` is the stored file it replaces or was renamed from."""
        self.new.append(new)

    def flush(self) -> None:
        if not self.pending():
            return
        store = self.store
        with store.transaction():
            ids: list[int] = []
            for record, scanned, facts in self.renames:
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
            written: list[NewFile] = []
            for new in self.new:
                file_id = self.write_note(new)
                if file_id is not None:
                    ids.append(file_id)
                    written.append(new)
            generation = store.bump_generation()
        if self.plan.grow_keyword:
            self._unmirrored.extend(ids)
            if len(self._unmirrored) >= self._mirror_at:
                self.mirror_grown()
        elif not self.plan.rebuild_keyword:
            known = self.plan.known
            replaced = [known[new.path].id for new in written if new.path in known]
            # Read back lazily: Whoosh takes them one by one (its writer's pool is bounded).
            self.mirror(
                replaced + [r[0].id for r in self.renames], store.iter_chunks(ids), generation
            )
        self.new, self.renames = [], []

    def mirror_grown(self) -> None:
        """A first index: add the files committed since the last keyword commit."""
        if not self._unmirrored or self.plan.rebuild_keyword:
            return
        ids, self._unmirrored = self._unmirrored, []
        self._mirror_at *= _MIRROR_GROWTH
        chunks, generation = self.store.iter_chunks(ids), self.store.generation()
        self._keyword_write(lambda: self.keyword.grow(add_chunks=chunks, generation=generation))

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
            self.plan.rebuild_keyword = True
            self.plan.grow_keyword = False


class _ShadowWriter(_BatchWriter):
    """Writes a forced rebuild into the shadow store, beside the live one (apus.indexing.shadow).

    Every chunk whose text is unchanged keeps the id it has in the live store: a reader that
    pairs the new store with the old keyword index or FAISS for a moment while they are
    swapped still finds it. Nothing is mirrored into Whoosh: the shadow's keyword index is
    built once, at the end.
    """

    rebuilding = True

    def __init__(
        self,
        shadow: Store,
        live: Store,
        keyword: KeywordIndex,
        plan: SyncPlan,
        emit: ProgressCallback = ignore_progress,
    ) -> None:
        super().__init__(shadow, keyword, plan, emit)
        self.live = live
        self.sources: dict[str, FileRecord] = {}  # new path -> the live file it continues

    def add(self, new: NewFile, source: FileRecord | None) -> None:
        self.new.append(new)
        if source is not None:
            self.sources[new.path] = source

    def flush(self) -> None:
        if not self.new:
            return
        live_chunks: dict[int, list[ChunkRecord]] = {}
        for chunk in self.live.iter_chunks([source.id for source in self.sources.values()]):
            live_chunks.setdefault(chunk.file_id, []).append(chunk)
        with self.store.transaction():
            for new in self.new:
                source = self.sources.get(new.path)
                before = live_chunks.get(source.id, []) if source is not None else []
                if before:  # matched against the live chunks, then written: made once
                    new = replace(new, chunks=list(new.chunks))
                self.write_note(new, _reusable_ids(new, before))
            self.store.bump_generation()
        self.new, self.sources = [], {}


class _Telling:
    """What other processes are told of a sync's progress (`ReadingProgressFile`): notes
    read are told as reading starts, then at each batch, when what a search finds changes
    anyway, not every 50 notes as the session hears them (each telling replaces a file:
    3% of a cold index's CPU)."""

    def __init__(self, reading: ReadingProgressFile) -> None:
        self._reading = reading
        self._phase: str | None = None  # of the last event told

    def tell(self, event: SyncProgress) -> None:
        between_batches = event.done % _BATCH_FILES and event.done != event.total
        if event.phase == "index" and self._phase == "index" and between_batches:
            return
        self._reading.publish(event)
        self._phase = event.phase


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


class Indexer:
    """Keeps one vault's store and derived indexes in step with the files on disk."""

    def __init__(self, settings: Settings, provider: ProviderResolution = KEYWORD_ONLY) -> None:
        self.settings = settings
        self.provider = provider
        self.vault = settings.vault_path()
        self.index_dir = settings.index_dir()

    def sync(
        self,
        request: SyncRequest | None = None,
        *,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
    ) -> SyncReport:
        """Bring the index up to date, embeddings included when the provider can embed.

        `request.force` re-reads every file and rebuilds the keyword index (and may replace
        vectors of another model); `request.reembed` embeds every chunk again instead of
        reusing cached vectors.
        """
        request = request or SyncRequest()
        force = request.force
        self._check_vault()
        started = time.monotonic()
        report = SyncReport()
        told = progress or ignore_progress
        reading = ReadingProgressFile(self.index_dir)  # for searches in other processes

        telling = _Telling(reading)

        def emit(event: SyncProgress) -> None:
            told(event)
            telling.tell(event)
            hold_progress(event)  # a test hook: nothing unless APUS_TEST_HOLD is set

        with WriterLock(self.index_dir, self.vault):
            hold_point("start")
            report.store_set_aside = Store.set_aside_if_damaged(self.index_dir, thorough=force)
            store = Store(self.index_dir)
            try:
                discard_leftover(self.index_dir, store)  # a forced rebuild that died
                if force:
                    self._rebuild_beside(store, report, request, cancel, emit)
                else:
                    self._update_in_place(store, report, request, cancel, emit)
            finally:
                store.close()
                reading.clear()
            hold_point("end")
        report.seconds = time.monotonic() - started
        return report

    def _update_in_place(
        self,
        store: Store,
        report: SyncReport,
        request: SyncRequest,
        cancel: threading.Event | None,
        emit: ProgressCallback,
    ) -> None:
        """Write what changed into the live index, batch by batch, then embed."""
        keyword = KeywordIndex(self.index_dir)
        try:
            self._keyword_steps(store, keyword, report, cancel, emit, notes=request.notes)
            report.embedding = run_embedding(
                store,
                self.index_dir,
                self.provider,
                request,
                cancel=cancel,
                emit=emit,
            )
            report.cancelled = report.embedding.state == "cancelled"
        except SyncCancelled:
            report.cancelled = True
        finally:
            keyword.close()

    def _rebuild_beside(
        self,
        live: Store,
        report: SyncReport,
        request: SyncRequest,
        cancel: threading.Event | None,
        emit: ProgressCallback,
    ) -> None:
        """`--force`: build a whole new index beside the live one, which keeps serving, and
        swap it in once its keyword part is complete (see apus.indexing.shadow). Stopped before
        that, it is discarded and the live index stays as it was."""
        folder = shadow_dir(self.index_dir)
        shadow = open_shadow(self.index_dir, live)
        keyword = KeywordIndex(folder)
        swapped = False
        try:
            self._keyword_steps(shadow, keyword, report, cancel, emit, live=live)
            keyword.close()
            # Embedding goes on in the shadow too: the live vectors serve until the swap.
            report.embedding = run_embedding(
                shadow,
                folder,
                self.provider,
                request,
                cancel=cancel,
                emit=emit,
            )
            # Stopped or failed while embedding: the new index is complete by keyword and
            # replaces the old one; the next sync embeds the rest, as after any stop.
            report.cancelled = report.embedding.state == "cancelled"
            swap_in(self.index_dir, live, shadow)
            swapped = True
        except SyncCancelled:
            report.cancelled = True
        except IndexWriteError as exc:
            raise IndexWriteError(
                f"{exc.reason} (A forced rebuild builds a second index beside the live one, "
                "which is kept as it was.)",
                exc.fix,
            ) from exc
        finally:
            keyword.close()
            shadow.close()
            if not swapped:
                discard_leftover(self.index_dir, live)

    def repair_keyword(self, *, damaged: bool = False) -> bool:
        """Rebuild the keyword index from the store if it cannot serve or lags behind it
        (`damaged`: a query failed on it, so rebuild even though it opens).

        Returns whether it rebuilt; IndexBusyError when another process holds the writer lock
        (that writer brings the index up to date itself).
        """
        with WriterLock(self.index_dir, self.vault):
            store = Store(self.index_dir)
            keyword = KeywordIndex(self.index_dir)
            try:
                state = keyword.state()
                if not damaged and state.usable and state.generation == store.generation():
                    return False
                keyword.rebuild(store)
                return True
            finally:
                keyword.close()
                store.close()

    def _check_vault(self) -> None:
        if not self.vault.is_dir():
            raise VaultError(
                f"The notes folder {self.vault} does not exist or is not a folder.",
                fix="apus --vault PATH ...  (or `apus setup` to choose one)",
            )

    def _keyword_steps(
        self,
        store: Store,
        keyword: KeywordIndex,
        report: SyncReport,
        cancel: threading.Event | None,
        emit: ProgressCallback,
        *,
        live: Store | None = None,
        notes: tuple[str, ...] | None = None,
    ) -> None:
        """Scan, write the notes into `store` and bring `keyword` up to date with it.

        With `live`, `store` is the shadow of a forced rebuild: every note is read again and
        written there, and the plan (what changed, was renamed, is gone) is made against the
        live store, which the shadow will replace. With `notes`, only those notes of the
        vault are read (the session's own writes: nothing else is walked, nothing is gone).
        """
        if notes is None:
            scan = admit_media(self._scan(cancel, emit), self.provider.embedder)
        else:
            sync = self.settings.search.sync
            scan = scan_notes(
                self.vault,
                notes,
                max_file_bytes=sync.max_file_bytes,
                cross_devices=sync.cross_devices,
            )
        signature = chunking_signature(self.settings)
        rebuilding = live is not None
        partial = notes is not None
        plan = plan_sync(scan, live or store, keyword, signature, force=rebuilding, partial=partial)
        report.files = len(scan.files)  # of a sync of some notes: those it looked at
        report.unchanged = plan.unchanged
        writer = (
            _ShadowWriter(store, live, keyword, plan, emit)
            if live is not None
            else _BatchWriter(store, keyword, plan, emit)
        )
        if plan.grow_keyword:
            self._start_keyword(store, keyword, plan)
        self._read_changed(plan, writer, report, cancel, emit)
        writer.mirror_grown()
        self._remove_gone(plan, writer, report)
        if not partial:  # transcripts are never the session's own writes
            report.sessions = sync_transcripts(
                store,
                self.settings,
                force=rebuilding,
                mirror=None if plan.rebuild_keyword else writer.mirror,
                cancel=cancel,
                emit=emit,
            )
        if plan.rebuild_keyword:
            self._rebuild_keyword(store, keyword, cancel, emit)
            report.keyword_rebuilt = True
        report.skipped = sorted(plan.skipped, key=lambda s: s.rel_path)
        report.problems = sorted(plan.problems.values(), key=lambda p: p.path)
        report.chunks = store.counts()[1]

    def _scan(self, cancel: threading.Event | None, emit: ProgressCallback) -> ScanResult:
        emit(SyncProgress("scan", 0, 0))
        try:
            return scan_roots(
                self.vault,
                self.settings.extra_roots(),
                max_file_bytes=self.settings.search.sync.max_file_bytes,
                cancel=cancel,
                on_progress=lambda n: emit(SyncProgress("scan", n, 0)),
                media=MEDIA_RULE,
                cross_devices=self.settings.search.sync.cross_devices,
            )
        except ScanCancelled as exc:
            raise SyncCancelled from exc
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise VaultError(str(exc), fix="apus --vault PATH ...") from exc

    def _read_changed(
        self,
        plan: SyncPlan,
        writer: _BatchWriter,
        report: SyncReport,
        cancel: threading.Event | None,
        emit: ProgressCallback,
    ) -> None:
        """Read each new or touched file; write what changed, batch by batch."""
        eta = Eta()
        total = len(plan.to_read)
        for done, scanned in enumerate(plan.to_read, start=1):
            if cancel is not None and cancel.is_set():
                raise SyncCancelled
            try:
                self._read_one(scanned, plan, writer, report)
            except _NOTE_FAILURES as exc:
                _note_failed(scanned, plan, writer, exc)
            if writer.pending() >= _BATCH_FILES:
                writer.flush()
            if done % 50 == 0 or done == total:
                emit(SyncProgress("index", done, total, eta(done, total)))
        if cancel is not None and cancel.is_set():
            raise SyncCancelled
        writer.flush()
        for path in writer.refused:  # counted as added or changed when read
            if path in plan.known:
                report.changed -= 1
            else:
                report.added -= 1

    def _read_one(
        self, scanned: ScannedFile, plan: SyncPlan, writer: _BatchWriter, report: SyncReport
    ) -> None:
        max_bytes = self.settings.search.sync.max_file_bytes
        media = is_media_path(scanned.rel_path)
        note = (
            read_media(scanned)
            if media
            else read_note_text(
                scanned.abs_path, max_file_bytes=max_bytes, expected_identity=scanned.identity
            )
        )
        previous = plan.known.get(scanned.rel_path)
        if note.text is None:
            plan.problems.pop(scanned.rel_path, None)
            plan.skipped.append(SkippedFile(scanned.rel_path, note.skip_reason or "unreadable"))
            if previous is not None:
                writer.removed_ids.append(previous.id)
            return
        if (
            previous is not None
            and previous.sha256 == note.sha256
            and not writer.rebuilding
            and previous.chunking == plan.signature
        ):
            # Touched, not changed: remember the new size and mtime so the next scan skips it.
            with writer.store.transaction():
                writer.store.touch_file(previous.id, scanned.size, scanned.mtime_ns)
            report.unchanged += 1
            return
        # A renamed media file is indexed anew (its description names its path); its vector
        # comes back from the cache, which is keyed by content.
        origin = plan.take_renamed(note.sha256) if previous is None and not media else None
        if origin is not None:
            report.renamed += 1
            moved = plan.problems.pop(origin.path, None)
            if moved is not None:
                plan.problems[scanned.rel_path] = replace(moved, path=scanned.rel_path)
            if not writer.rebuilding:
                # The chunks stay; what the name says (stem title, dates) follows it.
                writer.renames.append((origin, scanned, _name_facts(scanned, note.text)))
                return
        plan.problems.pop(scanned.rel_path, None)
        writer.add(
            media_new_file(scanned, note, plan.signature)
            if media
            else self._prepare(scanned, note.text, note.sha256, note.replaced_invalid_utf8, plan),
            previous or origin,
        )
        if previous is not None:
            report.changed += 1
        elif origin is None:
            report.added += 1

    def _remove_gone(self, plan: SyncPlan, writer: _BatchWriter, report: SyncReport) -> None:
        """Drop vanished and now-unreadable files; record the skip list and sync time."""
        store = writer.store
        removed_ids = writer.removed_ids + [record.id for record in plan.gone.values()]
        report.removed = len(plan.gone)
        if writer.rebuilding:
            removed_ids = []  # ids of the live store: the shadow never held those files
        with store.transaction():
            if removed_ids:
                store.delete_files(removed_ids)
            store.replace_skipped((s.rel_path, s.reason) for s in plan.skipped)
            for path in plan.gone:  # what is left there vanished (renames were taken out)
                plan.problems.pop(path, None)
            save_problems(store, plan.problems.values())
            store.set_meta("vault", str(self.vault))
            store.set_meta("last_sync", str(time.time()))
            store.set_meta("chunking", plan.signature)
            generation = store.bump_generation() if removed_ids else store.generation()
        if removed_ids and not plan.rebuild_keyword:
            writer.mirror(removed_ids, [], generation)

    @staticmethod
    def _start_keyword(store: Store, keyword: KeywordIndex, plan: SyncPlan) -> None:
        """A first index: an empty keyword index now, so searches find each batch once it
        is committed; one that cannot be made is built at the end instead, as before."""
        try:
            keyword.rebuild(store)  # nothing stored yet: empty, stamped with the generation
        except (OSError, IndexWriteError):
            plan.grow_keyword = False
            plan.rebuild_keyword = True

    @staticmethod
    def _rebuild_keyword(
        store: Store, keyword: KeywordIndex, cancel: threading.Event | None, emit: ProgressCallback
    ) -> None:
        emit(SyncProgress("keyword", 0, store.counts()[1]))
        try:
            keyword.rebuild(
                store, cancel=cancel, progress=lambda d, t: emit(SyncProgress("keyword", d, t))
            )
        except InterruptedError as exc:  # the rebuild's own way of saying "cancelled"
            raise SyncCancelled from exc

    def _prepare(
        self, scanned: ScannedFile, text: str, sha256: str, replaced: bool, plan: SyncPlan
    ) -> NewFile:
        chunking = self.settings.search.chunking
        note = parse_note(text, fallback_title=Path(scanned.rel_path).stem)
        # Made while the store writes them (apus.vault.chunk): a huge note's chunks are never
        # all held at once. A failure while chunking surfaces there, caught at this note.
        chunks = iter_chunks(note, max_tokens=chunking.tokens, overlap=chunking.overlap)
        facts = _facts(scanned, note)
        if note.problems:
            plan.problems[scanned.rel_path] = NoteProblem(
                scanned.rel_path, "; ".join(note.problems), FRONTMATTER_FIX, True
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
            chunking=plan.signature,
            replaced_utf8=replaced,
            chunks=chunks,
            tags=tuple(dict.fromkeys(fold_tag(tag) for tag in note.meta.tags)),
            dated=facts.dated,
        )


def _note_failed(
    scanned: ScannedFile, plan: SyncPlan, writer: _BatchWriter, exc: BaseException
) -> None:
    """A note that raised while read, parsed or chunked: skipped, its old version removed,
    the reason and fix recorded; the rest of the vault goes on."""
    reason = failure_reason(exc)
    plan.skipped.append(SkippedFile(scanned.rel_path, reason))
    plan.problems[scanned.rel_path] = NoteProblem(scanned.rel_path, reason, NOTE_FIX, False)
    previous = plan.known.get(scanned.rel_path)
    if previous is not None and not writer.rebuilding:
        writer.removed_ids.append(previous.id)


@dataclass(frozen=True)
class _NoteFacts:
    """What a note's name and text say about it beyond its chunks."""

    title: str
    note_date: str | None  # from the file name: recency decay
    dated: str | None  # file name, else frontmatter `date`, else modification day: filters


def _facts(scanned: ScannedFile, note: ParsedNote) -> _NoteFacts:
    name_date = date_from_path(scanned.rel_path)
    note_date = name_date.isoformat() if name_date else None
    modified = dt.datetime.fromtimestamp(scanned.mtime_ns / 1e9).date().isoformat()
    return _NoteFacts(note.title, note_date, note_date or note.meta.date or modified)


def _name_facts(scanned: ScannedFile, text: str) -> _NoteFacts:
    """A renamed note keeps its chunks; what the new name says (title, dates) follows it."""
    return _facts(scanned, parse_note(text, fallback_title=Path(scanned.rel_path).stem))
