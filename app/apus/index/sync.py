"""The Indexer: diff the vault against the store, apply the changes, update derived indexes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from apus.config import Settings
from apus.errors import VaultError
from apus.index.keyword import KeywordIndex
from apus.index.lock import WriterLock
from apus.index.store import ChunkRecord, FileRecord, NewFile, Store
from apus.vault.chunk import CHUNKING_VERSION, chunk_note
from apus.vault.dates import date_from_path
from apus.vault.markdown import parse_note
from apus.vault.scan import (
    ScanCancelled,
    ScannedFile,
    SkippedFile,
    read_note_text,
    scan_roots,
)

# Files written per SQLite transaction: a killed run loses at most one batch of work.
_BATCH_FILES = 500
# Above this many changed files a fresh keyword build is cheaper than incremental updates.
_REBUILD_THRESHOLD = 2000


@dataclass(frozen=True)
class SyncProgress:
    phase: str  # "scan", "index", "keyword", "embed"
    done: int
    total: int
    eta_seconds: float | None = None


ProgressCallback = Callable[[SyncProgress], None]
# A renamed file: its record, where it is now, and the title and date its new name gives.
_Rename = tuple[FileRecord, ScannedFile, str, str | None]


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
    keyword_rebuilt: bool = False
    cancelled: bool = False
    seconds: float = 0.0
    embedded: int = 0
    embed_error: str = ""


class SyncCancelled(Exception):
    """Raised inside the sync when its cancel event is set."""


class _Eta:
    """Remaining time from the rate so far."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def __call__(self, done: int, total: int) -> float | None:
        elapsed = time.monotonic() - self.started
        if done <= 0 or elapsed < 0.5:
            return None
        return max(0.0, (total - done) * elapsed / done)


def chunking_signature(settings: Settings) -> str:
    chunking = settings.search.chunking
    return f"v{CHUNKING_VERSION}:{chunking.tokens}:{chunking.overlap}"


class Indexer:
    """Keeps one vault's store and derived indexes in step with the files on disk."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.vault = settings.vault_path()
        self.index_dir = settings.index_dir()

    def sync(
        self,
        *,
        force: bool = False,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
        after_keyword: Callable[[Store, SyncReport], None] | None = None,
    ) -> SyncReport:
        """Bring the index up to date. Resumable: committed batches survive a kill or cancel.

        `after_keyword` runs (still under the writer lock) once keyword data is committed;
        the vector stage hooks in there.
        """
        if not self.vault.is_dir():
            raise VaultError(
                f"The notes folder {self.vault} does not exist or is not a folder.",
                fix="apus --vault PATH ...  (or `apus setup` to choose one)",
            )
        started = time.monotonic()
        report = SyncReport()
        emit = progress or (lambda _event: None)
        with WriterLock(self.index_dir, self.vault):
            Store.set_aside_if_damaged(self.index_dir, thorough=force)
            store = Store(self.index_dir)
            keyword = KeywordIndex(self.index_dir)
            try:
                self._sync_locked(store, keyword, report, force, cancel, emit)
                if after_keyword is not None and not report.cancelled:
                    after_keyword(store, report)
            except SyncCancelled:
                report.cancelled = True
            finally:
                keyword.close()
                store.close()
        report.seconds = time.monotonic() - started
        return report

    def _sync_locked(
        self,
        store: Store,
        keyword: KeywordIndex,
        report: SyncReport,
        force: bool,
        cancel: threading.Event | None,
        emit: ProgressCallback,
    ) -> None:
        search = self.settings.search
        signature = chunking_signature(self.settings)
        emit(SyncProgress("scan", 0, 0))
        try:
            scan = scan_roots(
                self.vault,
                self.settings.extra_roots(),
                max_file_bytes=search.sync.max_file_bytes,
                cancel=cancel,
                on_progress=lambda n: emit(SyncProgress("scan", n, 0)),
            )
        except ScanCancelled as exc:
            raise SyncCancelled from exc
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise VaultError(str(exc), fix="apus --vault PATH ...") from exc
        report.files = len(scan.files)
        skipped = list(scan.skipped)

        known = store.files()
        seen = {f.rel_path for f in scan.files}
        to_read: list[ScannedFile] = []
        for scanned in scan.files:
            record = known.get(scanned.rel_path)
            if (
                record is not None
                and not force
                and record.size == scanned.size
                and record.mtime_ns == scanned.mtime_ns
                and record.chunking == signature
            ):
                report.unchanged += 1
            else:
                to_read.append(scanned)
        gone = {path: rec for path, rec in known.items() if path not in seen}
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
        eta = _Eta()
        total = len(to_read)
        touched_file_ids: list[int] = []
        removed_ids: list[int] = []

        def apply_keyword(remove: list[int], add: list[ChunkRecord], generation: int) -> None:
            nonlocal rebuild_keyword
            try:
                keyword.apply(remove_file_ids=remove, add_chunks=add, generation=generation)
            except Exception:  # damage that opening did not show (Whoosh raises many types)
                rebuild_keyword = True  # the store is committed: Whoosh is rebuilt from it below

        def flush(batch: list[NewFile], renames: list[_Rename]) -> None:
            with store.transaction():
                ids: list[int] = []
                for record, scanned, title, note_date in renames:
                    store.rename_file(
                        record.id,
                        scanned.rel_path,
                        scanned.size,
                        scanned.mtime_ns,
                        title=title,
                        note_date=note_date,
                    )
                    ids.append(record.id)
                for new in batch:
                    file_id, _ = store.add_file(new)
                    ids.append(file_id)
                generation = store.bump_generation()
            if not rebuild_keyword:
                old_ids = [known[new.path].id for new in batch if new.path in known]
                apply_keyword(
                    old_ids + [rename[0].id for rename in renames],
                    list(store.iter_chunks(ids)),
                    generation,
                )
            touched_file_ids.extend(ids)

        batch: list[NewFile] = []
        renames: list[_Rename] = []
        for done, scanned in enumerate(to_read, start=1):
            if cancel is not None and cancel.is_set():
                raise SyncCancelled
            note = read_note_text(scanned.abs_path, max_file_bytes=search.sync.max_file_bytes)
            if note.text is None:
                skipped.append(SkippedFile(scanned.rel_path, note.skip_reason or "unreadable"))
                previous = known.get(scanned.rel_path)
                if previous is not None:
                    removed_ids.append(previous.id)
            else:
                previous = known.get(scanned.rel_path)
                if (
                    previous is not None
                    and previous.sha256 == note.sha256
                    and not force
                    and (previous.chunking == signature)
                ):
                    with store.transaction():
                        store.touch_file(previous.id, scanned.size, scanned.mtime_ns)
                    report.unchanged += 1
                elif previous is None and gone_by_sha.get(note.sha256):
                    origin = gone_by_sha[note.sha256].pop()
                    del gone[origin.path]
                    # The chunks stay; what the name says (stem title, date) follows it.
                    title, note_date = self._name_metadata(scanned, note.text)
                    renames.append((origin, scanned, title, note_date))
                    report.renamed += 1
                else:
                    batch.append(
                        self._prepare(
                            scanned, note.text, note.sha256, note.replaced_invalid_utf8, signature
                        )
                    )
                    if previous is None:
                        report.added += 1
                    else:
                        report.changed += 1
            if len(batch) + len(renames) >= _BATCH_FILES:
                flush(batch, renames)
                batch, renames = [], []
            if done % 50 == 0 or done == total:
                emit(SyncProgress("index", done, total, eta(done, total)))
        if cancel is not None and cancel.is_set():
            raise SyncCancelled
        if batch or renames:
            flush(batch, renames)

        removed_ids.extend(record.id for record in gone.values())
        report.removed = len(gone)
        with store.transaction():
            if removed_ids:
                store.delete_files(removed_ids)
            store.replace_skipped((s.rel_path, s.reason) for s in skipped)
            store.set_meta("vault", str(self.vault))
            store.set_meta("last_sync", str(time.time()))
            store.set_meta("chunking", signature)
            generation = store.bump_generation() if removed_ids else store.generation()
        if removed_ids and not rebuild_keyword:
            apply_keyword(removed_ids, [], generation)
        if rebuild_keyword:
            emit(SyncProgress("keyword", 0, store.counts()[1]))
            try:
                keyword.rebuild(
                    store,
                    cancel=cancel,
                    progress=lambda d, t: emit(SyncProgress("keyword", d, t)),
                )
            except InterruptedError as exc:  # the rebuild's own way of saying "cancelled"
                raise SyncCancelled from exc
            report.keyword_rebuilt = True
        report.skipped = sorted(skipped, key=lambda s: s.rel_path)
        report.chunks = store.counts()[1]

    @staticmethod
    def _name_metadata(scanned: ScannedFile, text: str) -> tuple[str, str | None]:
        title = parse_note(text, fallback_title=Path(scanned.rel_path).stem).title
        name_date = date_from_path(scanned.rel_path)
        return title, name_date.isoformat() if name_date else None

    def _prepare(
        self, scanned: ScannedFile, text: str, sha256: str, replaced: bool, signature: str
    ) -> NewFile:
        chunking = self.settings.search.chunking
        stem = Path(scanned.rel_path).stem
        note = parse_note(text, fallback_title=stem)
        chunks = chunk_note(note, max_tokens=chunking.tokens, overlap=chunking.overlap)
        name_date = date_from_path(scanned.rel_path)
        return NewFile(
            path=scanned.rel_path,
            size=scanned.size,
            mtime_ns=scanned.mtime_ns,
            sha256=sha256,
            title=note.title,
            note_date=name_date.isoformat() if name_date else None,
            importance=note.meta.importance,
            triggers=note.meta.triggers,
            chunking=signature,
            replaced_utf8=replaced,
            chunks=chunks,
        )
