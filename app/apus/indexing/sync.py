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

import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from apus.config import Settings
from apus.embed.providers import ProviderResolution
from apus.errors import VaultError
from apus.index.keyword import KeywordIndex
from apus.index.keyword_freshness import keyword_freshness
from apus.index.media import MEDIA_RULE
from apus.index.note_problems import NoteProblem
from apus.index.set_aside import SetAside, set_aside_if_damaged
from apus.index.sqlite import IndexWriteError
from apus.index.store import Store
from apus.indexing.embedding import EmbedOutcome, run_embedding
from apus.indexing.holds import hold_point, hold_progress
from apus.indexing.keyword_step import rebuild_keyword, start_growing
from apus.indexing.lock import WriterLock
from apus.indexing.media import admit_media
from apus.indexing.notes_step import NotesStep
from apus.indexing.plan import chunking_signature, plan_sync
from apus.indexing.progress import ProgressCallback, SyncProgress, ignore_progress
from apus.indexing.reading_progress import ReadingProgressFile
from apus.indexing.request import SyncRequest
from apus.indexing.run import SyncCancelled, SyncRun
from apus.indexing.shadow import discard_leftover, open_shadow, shadow_dir, swap_in
from apus.indexing.transcripts import TranscriptReport, sync_transcripts
from apus.indexing.writers import BATCH_FILES, LiveWriter, NoteWriter, ShadowWriter
from apus.vault.scan import ScanCancelled, ScanResult, SkippedFile, scan_notes, scan_roots

# The provider of a sync that only keeps keyword data (tests, benchmarks, `provider = none`).
KEYWORD_ONLY = ProviderResolution(None, "off", "provider is none")


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


class _Telling:
    """What other processes are told of a sync's progress (`ReadingProgressFile`): notes
    read are told as reading starts, then at each batch, when what a search finds changes
    anyway, not every 50 notes as the session hears them (each telling replaces a file:
    3% of a cold index's CPU)."""

    def __init__(self, reading: ReadingProgressFile) -> None:
        self._reading = reading
        self._phase: str | None = None  # of the last event told

    def tell(self, event: SyncProgress) -> None:
        between_batches = event.done % BATCH_FILES and event.done != event.total
        if event.phase == "index" and self._phase == "index" and between_batches:
            return
        self._reading.publish(event)
        self._phase = event.phase


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

        with WriterLock(self.index_dir, self.vault, wait_s=request.wait_s):
            hold_point("start")
            report.store_set_aside = set_aside_if_damaged(self.index_dir, thorough=force)
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
                if keyword_freshness(keyword, store.generation(), damaged=damaged).current:
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
        entries = self.settings.search.chunking.entries
        partial = notes is not None
        plan = plan_sync(
            scan,
            live or store,
            keyword,
            signature,
            force=rebuilding,
            entries=entries,
            partial=partial,
        )
        report.files = len(scan.files)  # of a sync of some notes: those it looked at
        run = SyncRun(plan)
        writer: NoteWriter = (
            ShadowWriter(store, live, run, emit)
            if live is not None
            else LiveWriter(store, keyword, run, emit)
        )
        try:
            if run.keyword == "grow":
                start_growing(store, keyword, run)
            step = NotesStep(self.settings, run, writer, emit, cancel)
            step.read_changed()
            writer.mirror_grown()
            step.remove_gone()
            if not partial:  # transcripts are never the session's own writes
                report.sessions = sync_transcripts(
                    store,
                    self.settings,
                    force=rebuilding,
                    mirror=writer.keyword_mirror(),
                    cancel=cancel,
                    emit=emit,
                )
            if run.keyword == "rebuild":
                rebuild_keyword(store, keyword, cancel, emit)
                report.keyword_rebuilt = True
        finally:  # what was committed, also when the sync stops early
            report.added = run.counts["added"]
            report.changed = run.counts["changed"]
            report.renamed = run.counts["renamed"]
            report.unchanged = run.unchanged
            report.removed = run.removed
        report.skipped = sorted(run.skipped, key=lambda s: s.rel_path)
        report.problems = sorted(run.problems.values(), key=lambda p: p.path)
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
