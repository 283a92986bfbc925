"""The session: one vault, one settings object, and everything a face asks of them."""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from apus.config import Settings, SettingsSource
from apus.embedding_services import is_remote
from apus.errors import ApusError, IndexBusyError, SearchInputError
from apus.index.note_filter import Asker, NoteFilter
from apus.index.sqlite import IndexWriteError
from apus.index.store import Store
from apus.indexing.request import SyncRequest
from apus.memory.sync_queue import Backoff, SyncEvent, SyncQueue
from apus.memory.transcript_reader import (
    DEFAULT_HISTORY,
    ConversationWindow,
    TranscriptMatch,
    scoped_filter,
    search_transcripts,
    transcript_history,
)
from apus.search.engine import Searcher
from apus.search.options import SearchOptions
from apus.search.query import ParsedQuery, require_words
from apus.search.results import Repair, SearchHit, SearchResponse
from apus.search.time_words import today

# What only indexing, status, writing, recall, search by meaning or a live session needs is
# imported where it is used: a one-shot search starts a new process each time and pays for
# every module (the embedding providers alone are a tenth of a keyword search's imports).
if TYPE_CHECKING:
    from apus.embed.providers import ProviderResolution
    from apus.index.last_sync import LastSync, RecoveredCrashes
    from apus.index.status import EmbeddingsState, IndexStatus
    from apus.indexing.progress import ProgressCallback, SyncProgress
    from apus.indexing.sync import Indexer, SyncReport
    from apus.memory.note_reader import NoteLines
    from apus.memory.writer import Entry, WrittenEntry
    from apus.search.recall import RecallEntry
    from apus.search.vector_leg import ProviderVectorLeg

log = logging.getLogger(__name__)


# How long a write waits for its entry to be indexed before answering without it.
INDEX_WAIT_S = 120.0


@dataclass(frozen=True)
class WrittenMemory:
    entry: WrittenEntry
    indexed: bool  # searchable when the call returned
    not_indexed: str = ""  # why not, when not: what the agent or person is told

    @property
    def searchable(self) -> str:
        """When the entry is found by search, in words: "searchable now." or why not yet."""
        return "searchable now." if self.indexed else self.not_indexed

    notices: tuple[str, ...] = ()  # what the writer should know about where it went


# Said when an entry's triggers go where recall does not read them.
UNRECALLED_TRIGGERS = (
    "its triggers were written, but recall (memory_recall, apus memory recall) reads "
    "triggers only in MEMORY.md and USER.md: write the entry there to have them recall "
    "it (search finds it either way)"
)


@dataclass(frozen=True)
class _Asked:
    """One search as the session's rules make it: the words (and dates) read from the query,
    the options the Searcher gets, and how its answer is cut back (`per_note`)."""

    words: ParsedQuery
    options: SearchOptions  # scoped and dated, for the passages shown
    per_note: int | None

    @property
    def undated(self) -> SearchOptions:
        """The same search over notes of any date (when the dates read from the query hold
        nothing)."""
        return replace(self.options, filters=replace(self.options.filters, since=None, until=None))

    def refill(self, options: SearchOptions, hits: list[SearchHit]) -> SearchOptions | None:
        """When keeping `per_note` passages a note dropped some of `hits`, the same search
        asking for enough more to fill their places; else None (the answer stands as it
        is, the one a search without the limit gives)."""
        if self.per_note is None:
            return None
        from apus.search.per_note import fetch_for, limit_per_note

        if len(limit_per_note(hits, self.per_note)) == len(hits):
            return None
        assert options.limit is not None
        return replace(options, limit=fetch_for(options.limit, self.per_note))


@dataclass(frozen=True)
class WatchStopped:
    """Changes on disk are no longer picked up by themselves (the watcher failed)."""

    error: BaseException


MemoryEvent = SyncEvent | WatchStopped
Listener = Callable[[MemoryEvent], None]


def _not_indexed(reason: str, fix: str) -> str:
    return f"it is not searchable yet: the index could not be updated ({reason} Fix: {fix})."


class Memory:
    """Owns the provider, Indexer, Searcher and background syncs of one vault.

    The provider is resolved once (a local model server starts on the first embedding) and
    again only when `reload()` finds other settings. Thread-safe: the app calls it from its
    workers, the agent server from its request handlers.
    """

    def __init__(
        self, source: SettingsSource | None = None, *, settings: Settings | None = None
    ) -> None:
        """From a source (the faces), or from settings built in code (benchmarks, tests): such
        a session cannot reload them, and work it would hand to a detached process waits for
        the next sync instead."""
        if settings is None:
            if source is None:
                raise TypeError("Memory needs a settings source or settings")
            settings = source.load()
        self.source = source
        self.settings = settings
        self._lock = threading.RLock()
        self._provider: ProviderResolution | None = None
        self._session_leg: ProviderVectorLeg | None = None
        self._searcher: Searcher | None = None
        self._syncs: SyncQueue | None = None
        self._listeners: list[Listener] = []
        self._embedding: SyncProgress | None = None  # this process's embed progress, if any
        self._stop_watching = threading.Event()
        self._watcher: threading.Thread | None = None
        self._watch_live = threading.Event()  # set once the OS watch is installed
        self._last_sync: LastSync | None = None  # how this session's last sync ended
        self._detached_started = False  # a one-shot session hands work away once
        # The writes of every caller of this session (each client of an HTTP server) go out
        # one at a time through this lock; other processes wait on the writers' file lock.
        self._write_lock = threading.Lock()

    # -- what the session is about --------------------------------------------------------

    @property
    def vault(self) -> Path:
        return self.settings.vault_path()

    @property
    def index_dir(self) -> Path:
        return self.settings.index_dir()

    @property
    def provider(self) -> ProviderResolution:
        """The embedding provider of these settings, resolved on first use."""
        from apus.embed.providers import resolve_provider

        with self._lock:
            if self._provider is None:
                self._provider = resolve_provider(self.settings.search)
            return self._provider

    @property
    def strict(self) -> bool:
        """Whether search must fail rather than answer by keyword alone when embeddings
        cannot run: an explicitly configured remote provider, or `fallback = "none"`."""
        search = self.settings.search
        return is_remote(search.provider) or search.fallback == "none"

    def reload(self) -> bool:
        """Re-read the settings; a change of the search settings re-resolves the provider.

        Returns whether anything changed.
        """
        if self.source is None:
            return False
        fresh = self.source.load()
        with self._lock:
            if fresh == self.settings:
                return False
            search_changed = fresh.search != self.settings.search
            self.settings = fresh
            if search_changed:
                self._close_search_side()
            return True

    # -- searching ------------------------------------------------------------------------

    def searcher(self) -> Searcher:
        with self._lock:
            if self._searcher is None:
                # The provider is resolved when a search first needs the vector leg: a
                # keyword search never resolves it (a local model's file is checked then).
                self._searcher = Searcher(
                    self.settings, vector_leg_source=self._session_vector_leg, strict=self.strict
                )
            return self._searcher

    def search(
        self, query: str | ParsedQuery, options: SearchOptions | None = None
    ) -> SearchResponse:
        """One search, by the rules every face shares (`SearchOptions`): the dates a time
        in the query names (`time_words`; searched over any date when they hold nothing:
        `widened`), `since` no later than `until`, at most `per_note` passages of one note
        (more are fetched, so that other notes fill the places), weak hits marked; both legs
        merged, or what can run and why the rest cannot. What the search found that a sync
        should do is done (`_act_on`); a keyword index repaired then is asked again."""
        asked = self._asked(query, options)
        response = self._filled(asked, asked.options)
        widened = asked.words.window is not None and not response.hits
        if widened:
            response = self._filled(asked, asked.undated)
        return replace(self._shaped(response, asked), widened=widened)

    def search_stages(
        self, query: str | ParsedQuery, options: SearchOptions | None = None
    ) -> Iterator[SearchResponse]:
        """Keyword results at once, then merged ones when the vector leg can add to them (by
        the rules `search` keeps)."""
        asked = self._asked(query, options)
        searcher = self.searcher()
        last: SearchResponse | None = None
        for last in searcher.search_stages(asked.words, asked.options):
            yield self._shaped(last, asked)
        if last is None:
            return
        self._act_on(last.repairs)
        more = asked.refill(asked.options, last.hits)
        if more is not None:
            yield self._shaped(self._searched(asked.words, more), asked)
        if asked.words.window is not None and not last.hits:
            widened = self._shaped(self._filled(asked, asked.undated), asked)
            yield replace(widened, widened=True)

    def _asked(self, query: str | ParsedQuery, options: SearchOptions | None) -> _Asked:
        """The search the rules make of a face's question (see `search`)."""
        if isinstance(query, str):
            require_words(query)
        options = self._scoped(options)
        filters = options.filters
        since, until = filters.since, filters.until
        if since is not None and until is not None and since > until:
            raise SearchInputError(
                f"`since` ({since}) is after `until` ({until}): no day is in both.",
                fix="swap them, or leave one out",
            )
        undated = since is None and until is None
        if isinstance(query, ParsedQuery):
            words = query
        elif options.time_words and undated:
            words = ParsedQuery.dated(query, today=today())
        else:
            words = ParsedQuery.parse(query)
        if words.window is not None and undated:
            filters = replace(filters, since=words.window.since, until=words.window.until)
        else:
            words = replace(words, window=None)
        shown = options.limit or self.settings.search.query.max_results
        return _Asked(words, replace(options, limit=shown, filters=filters), options.per_note)

    def _filled(self, asked: _Asked, options: SearchOptions) -> SearchResponse:
        """The answer with `options`; asked again for more passages when keeping `per_note`
        a note dropped some (only then: ranking 30 passages for 10 shown cost 4.25 ms CPU
        a search instead of 2.49 on 7,424 notes, and the limit dropped a passage in 7 of
        200 sampled searches)."""
        response = self._searched(asked.words, options)
        more = asked.refill(options, response.hits)
        return response if more is None else self._searched(asked.words, more)

    def _searched(self, words: ParsedQuery, options: SearchOptions) -> SearchResponse:
        """The Searcher's answer; asked again when the keyword index it found lacking was
        brought up to date here and now."""
        searcher = self.searcher()
        response = searcher.search(words, options)
        try:
            repaired = self._act_on(response.repairs)
        except IndexWriteError as exc:  # a full disk: answer from the index as it is
            log.info("keyword index not repaired: %s", exc.reason)
            return _left_behind(response, exc)
        if repaired:
            return searcher.search(words, options)
        failing = self._failing_syncs(response.repairs)
        return response if failing is None else _left_behind(response, failing)

    def _failing_syncs(self, repairs: frozenset[Repair]) -> ApusError | None:
        """Why the keyword index this search found behind is not brought up to date, when
        this server's syncs keep failing to (the search answers from it as it is)."""
        if "keyword" not in repairs and "keyword-damaged" not in repairs:
            return None
        if self._syncs is None or not self._syncs.failures:
            return None
        last = self.last_sync
        if last is None or last.ok:
            return None
        return ApusError(last.error or "the last sync failed", last.fix)

    def _shaped(self, response: SearchResponse, asked: _Asked) -> SearchResponse:
        """The answer cut to what was asked (`per_note`), its weak hits marked, and the dates
        read from the query."""
        hits = response.hits
        if asked.per_note is not None:
            from apus.search.per_note import limit_per_note

            hits = limit_per_note(hits, asked.per_note)[: asked.options.limit]
        return replace(response, hits=self._marked_weak(hits), time_window=asked.words.window)

    def _marked_weak(self, hits: list[SearchHit]) -> list[SearchHit]:
        """`hits` with their weak ones marked (found by meaning alone, below the model's
        threshold); the provider is resolved only when such a hit is there, so a keyword
        answer never checks a model file."""
        from apus.search.weak import found_by_meaning_alone, weak_chunks

        if not found_by_meaning_alone(hits):
            return hits
        weak = weak_chunks(hits, self.provider.embedder)
        return [replace(hit, weak=True) if hit.chunk_id in weak else hit for hit in hits]

    def related(
        self, path: str, limit: int = 10, filters: NoteFilter | None = None
    ) -> SearchResponse:
        """Notes most related to the indexed note at `path` (itself excluded)."""
        rel_path = self._indexed_path(path)
        scoped = None if filters is None else scoped_filter(self.settings, filters)
        return self.searcher().related(rel_path, limit, scoped)

    def get(self, path: str, start: int = 1, lines: int | None = None) -> NoteLines:
        """Lines of an indexed note; anything else is refused with the reason. `path` may be
        a search result's citation (`path#Lx-Ly`, `path#Lx`): its lines are the window."""
        with self._read_store() as store:
            from apus.memory.note_reader import DEFAULT_LINES, read_address

            count = DEFAULT_LINES if lines is None else lines
            return read_address(self.settings, store, path, start, count)

    def write(self, entry: Entry, now: dt.datetime) -> WrittenMemory:
        """Append an agent's entry to a memory note (when writing is on), then index it, so
        the next search finds it. `now` names the daily note and stamps the entry."""
        from apus.index.triggers import TRUSTED_FILES
        from apus.memory.writer import append_entry

        with self._write_lock:
            written = append_entry(self.settings, self.index_dir, entry, now)
        unrecalled = bool(entry.triggers) and written.path not in TRUSTED_FILES
        notices = (UNRECALLED_TRIGGERS,) if unrecalled else ()
        problem = self._index_now(written.path)
        return WrittenMemory(written, problem is None, problem or "", notices)

    def _index_now(self, note: str) -> str | None:
        """Index the note just written before answering: that note alone (the vault is not
        walked for it), by the next sync of the queue when live, waiting in line behind
        other writers of the index; None when done, else why the entry is not searchable
        yet (it is written all the same)."""
        # The note alone once a sync has read the whole vault in; before that (a first
        # write into a vault never indexed), the whole vault, or its other notes would stay
        # unsearched until a sync that nothing asks for.
        alone = (note,) if self._vault_read() else None
        request = SyncRequest(wait_s=INDEX_WAIT_S, notes=alone)
        busy = "it will be searchable after the sync another process is running."
        if self._syncs is not None:
            ticket = self._syncs.request(request)
            if self._syncs.wait_for(ticket, timeout=INDEX_WAIT_S):
                return None
            last = self.last_sync
            if self._syncs.failures and last is not None and not last.ok:
                return _not_indexed(last.error or "", last.fix or "")
            return busy
        try:
            self.sync(request)
        except IndexBusyError:
            return busy
        except ApusError as exc:
            return _not_indexed(exc.reason, exc.fix)
        return None

    def recall(self, message: str) -> list[RecallEntry]:
        """Trigger recall over MEMORY.md / USER.md; vectors help when they can."""
        from apus.search.recall import recall

        require_words(message, what="message")
        if not Store.exists(self.index_dir):
            return []
        # Trigger vectors are looked up by identity key, so a stale or missing set simply
        # leaves recall to keywords; no identity check (a request, for remote providers).
        embedder = self.provider.embedder
        weight = self.settings.search.query.hybrid.vector_weight
        store = Store(self.index_dir, readonly=True)
        try:
            from apus.embed.base import EmbeddingError

            try:
                return recall(store, message, embedder=embedder, vector_weight=weight)
            except EmbeddingError:
                return recall(store, message, embedder=None)
        finally:
            store.close()

    # -- status ---------------------------------------------------------------------------

    def status(self, *, deep: bool = False) -> IndexStatus:
        from apus.index.status import collect_status

        reading = self.reading(other_than=os.getpid())
        building = ""
        if reading is not None:
            count = f" {reading.done} of {reading.total}" if reading.total else ""
            building = reading.label + count
        return collect_status(
            self.settings,
            self.embeddings(deep=deep),
            last_sync=self.last_sync,
            building=building,
        )

    @property
    def last_sync(self) -> LastSync | None:
        """How the latest sync of this index ended: this session's, or another process's
        when that one is newer (recorded beside the index by whoever ran it)."""
        from apus.index.last_sync import newer, read_last_sync

        return newer(self._last_sync, read_last_sync(self.index_dir))

    def reading(self, *, other_than: int | None = None) -> SyncProgress | None:
        """How far a sync (this session's or another process's; not process `other_than`'s)
        has read the notes, while it still reads them: searches until then cover only the
        notes read so far. A sync that only looks for changes over an index a finished sync
        left complete reads nothing yet (another server's start-up sync, above all): None."""
        from apus.indexing.reading_progress import reading_progress

        progress = reading_progress(self.index_dir, other_than=other_than)
        if progress is not None and progress.looking and self.index_complete():
            return None
        return progress

    def _vault_read(self) -> bool:
        """Whether a sync has read the whole vault into this index (the store says when one
        last finished)."""
        with self._read_store() as store:
            return store is not None and store.get_meta("last_sync") is not None

    def index_complete(self) -> bool:
        """Whether a sync has read the whole vault into this index (the store records when
        one last finished) and keyword search covers everything stored."""
        return self._vault_read() and self.searcher().keyword_ready()[0]

    def embeddings(self, *, deep: bool = False) -> EmbeddingsState:
        from apus.memory.embeddings import embeddings_state

        return embeddings_state(
            self.settings,
            self.provider,
            self._session_vector_leg(),
            running=self._embedding,
            deep=deep,
        )

    # -- indexing -------------------------------------------------------------------------

    def indexer(self) -> Indexer:
        # The writer side is imported by a command that writes, not by a search.
        from apus.indexing.sync import Indexer

        return Indexer(self.settings, self.provider)

    def sync(
        self,
        request: SyncRequest | None = None,
        *,
        cancel: threading.Event | None = None,
        progress: ProgressCallback | None = None,
    ) -> SyncReport:
        """Index now, in this thread (the CLI's `memory index`)."""
        from apus.index.last_sync import LastSync
        from apus.indexing.progress import ignore_progress

        emit = progress or ignore_progress

        def watched(event: SyncProgress) -> None:
            self._embedding = event if event.phase == "embed" else None
            emit(event)

        indexer = self.indexer()
        crashes_before = self._crashes_seen()
        try:
            report = indexer.sync(request, cancel=cancel, progress=watched)
        except IndexBusyError:
            raise  # another process is syncing: its outcome is the one to record
        except Exception as exc:
            self._record_sync(LastSync.failed(exc, self.last_sync))
            raise
        finally:
            self._embedding = None
        if not report.cancelled:
            recovered = self._crashes_recovered(crashes_before)
            self._record_sync(LastSync.succeeded(recovered=recovered))
        return report

    def _crashes_seen(self) -> dict[str, Any] | None:
        """The crashes of the embedding server this session's provider has seen so far."""
        embedder = self.provider.embedder
        seen = None if embedder is None else embedder.describe().get("crashes_seen")
        return seen if isinstance(seen, dict) else None

    def _crashes_recovered(self, before: dict[str, Any] | None) -> RecoveredCrashes | None:
        """The crashes seen since `before` (the sync went on after them)."""
        from apus.index.last_sync import RecoveredCrashes

        now = self._crashes_seen()
        count = 0 if now is None else int(now["count"]) - (0 if before is None else before["count"])
        if now is None or count <= 0:
            return None
        return RecoveredCrashes(count, str(now["last"]), float(now["at"]), str(now["fix"]))

    def _record_sync(self, outcome: LastSync) -> None:
        """Keep the outcome in the session, and beside the index for every other process."""
        from apus.index.last_sync import write_last_sync

        self._last_sync = outcome
        write_last_sync(self.index_dir, outcome)

    def retry_provider(self) -> None:
        """Start a local server again even after crashes in a row stopped restarts (the
        person asked for this run; background syncs never call it)."""
        from apus.embed.providers import retry_after_crashes

        retry_after_crashes(self.provider.embedder)

    def subscribe(self, listener: Listener) -> None:
        """Hear about background syncs and the watcher; called on their threads."""
        self._listeners.append(listener)

    def start_live(self, *, watch: bool | None = None, backoff: Backoff | None = None) -> None:
        """Keep the index fresh from now on: one sync now, then one after each change on disk
        (when `watch`, default `memory.search.sync.watch`); a failed sync is retried after
        `backoff`'s delays until one succeeds."""
        with self._lock:
            if self._syncs is None:
                self._syncs = SyncQueue(self._run_queued, self._tell, backoff=backoff)
        self._syncs.request()
        sync = self.settings.search.sync
        if (sync.watch if watch is None else watch) and self._watcher is None:
            self._watcher = threading.Thread(
                target=self._watch, args=(sync.watch_debounce_ms,), name="apus-watch", daemon=True
            )
            self._watcher.start()

    def request_sync(self, request: SyncRequest | None = None) -> None:
        """A sync soon: in the background queue when live, else in a detached process."""
        from apus.memory.detached import start_detached_index

        if self._syncs is not None:
            self._syncs.request(request or SyncRequest())
        elif self.source is not None:
            start_detached_index(self.source, self.settings)

    @property
    def watching(self) -> bool:
        """Whether changes on disk are being picked up by themselves right now."""
        return self._watcher is not None and self._watcher.is_alive()

    @property
    def watch_live(self) -> bool:
        """Whether the watch is installed, so any change on disk from now on is picked up
        (`watching` is true from the moment the watcher starts, a little before that)."""
        return self._watch_live.is_set() and self.watching

    @property
    def syncs(self) -> SyncQueue | None:
        """The background sync queue once `start_live` ran."""
        return self._syncs

    # -- closing --------------------------------------------------------------------------

    def close(self) -> None:
        """Stop background work (a running sync keeps what it committed) and release the
        provider (a managed embedding server stops when no other process uses it)."""
        self._stop_watching.set()
        if self._syncs is not None:
            self._syncs.close()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        with self._lock:
            self._close_search_side()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------------

    @contextmanager
    def _read_store(self) -> Iterator[Store | None]:
        if not Store.exists(self.index_dir):
            yield None
            return
        store = Store(self.index_dir, readonly=True)
        try:
            yield store
        finally:
            store.close()

    def _indexed_path(self, path: str) -> str:
        with self._read_store() as store:
            from apus.memory.note_reader import parse_address, resolve_indexed_note

            return resolve_indexed_note(self.settings, store, parse_address(path).path)[0]

    def _session_vector_leg(self) -> ProviderVectorLeg | None:
        """The session's one vector leg, made on first use (None: embeddings are off): the
        searcher's `vector_leg_source`, and what status reads the vectors' readiness from."""
        from apus.search.vector_leg import ProviderVectorLeg

        with self._lock:
            provider = self.provider
            # Without an embedder the leg still says why (and whether that is a failure).
            if self._session_leg is None and provider.state != "off":
                self._session_leg = ProviderVectorLeg(self.index_dir, provider, self._embedding_now)
            return self._session_leg

    def _embedding_now(self) -> bool:
        """Whether this process or another is embedding this index at this moment."""
        from apus.indexing.lock import writer_elsewhere

        return self._embedding is not None or writer_elsewhere(self.index_dir) is not None

    def _close_search_side(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
        if self._session_leg is not None:  # the searcher's, or made for status alone
            self._session_leg.close()
        self._session_leg = None
        if self._provider is not None and self._provider.embedder is not None:
            self._provider.embedder.close()
        self._provider = None

    def _act_on(self, repairs: frozenset[Repair]) -> bool:
        """Do what one search found a sync should do, once, under the session's lock: a
        missing, damaged or lagging keyword index is rebuilt through the Indexer (queued when
        live, here and now otherwise), and vectors.faiss to rebuild or vectors to re-embed
        ask for a sync (from the store: every vector is there). Returns whether the keyword
        index was repaired here and now, so the search can be asked again."""
        if not repairs:
            return False
        with self._lock:
            repaired = self._repair_keyword(repairs)
            # After the keyword repair: a detached sync would hold the writer lock it needs.
            if "vectors" in repairs and not self._detached_started:
                # A one-shot session hands the work to one detached sync; a live one queues
                # it (requests fold together).
                self._detached_started = self._syncs is None
                self.request_sync()
            return repaired

    def _repair_keyword(self, repairs: frozenset[Repair]) -> bool:
        damaged = "keyword-damaged" in repairs
        if not damaged and "keyword" not in repairs:
            return False
        if self._syncs is not None:
            # While this session's own sync runs, it makes, catches up or rebuilds the keyword
            # index itself (a first index creates it at its start, so a search just before
            # finds none): only damage a query met, which opening did not show, asks for
            # another. A later search asks again if the sync left anything to repair.
            if not self._syncs.running or damaged:
                self._syncs.request()
            return False
        try:
            return self.indexer().repair_keyword(damaged=damaged)
        except IndexBusyError:
            return False  # the writer holding the lock brings it up to date

    def _changed_on_disk(self, changed: frozenset[Path]) -> None:
        """A sync for what changed on disk: of those notes alone when each is a note of the
        vault still there (an edit, a new note), of the whole vault otherwise (a note gone or
        moved, a folder, a transcript, a file of extraPaths); none when the notes are all
        indexed as they are (the session's own writes, indexed when written)."""
        notes = self._changed_notes(changed)
        if notes is None:
            self.request_sync()
        elif notes:
            self.request_sync(SyncRequest(notes=notes))

    def _changed_notes(self, changed: frozenset[Path]) -> tuple[str, ...] | None:
        """The notes among `changed` not indexed as they are now, or None when a change is
        not a note of the vault that is still there."""
        from apus.vault.scan import is_note_name

        vault = self.vault.resolve()
        stale: list[str] = []
        with self._read_store() as store:
            for path in changed:
                if not path.is_relative_to(vault) or not is_note_name(path.name):
                    return None
                try:
                    found = path.stat()
                except OSError:
                    return None  # gone: only the walk tells a rename from a removal
                rel_path = path.relative_to(vault).as_posix()
                record = None if store is None else store.file_by_path(rel_path)
                if record is None or (record.size, record.mtime_ns) != (
                    found.st_size,
                    found.st_mtime_ns,
                ):
                    stale.append(rel_path)
        return tuple(sorted(stale))

    def _run_queued(
        self, request: SyncRequest, cancel: threading.Event, progress: ProgressCallback
    ) -> SyncReport:
        return self.sync(request, cancel=cancel, progress=progress)

    def _tell(self, event: MemoryEvent) -> None:
        for listener in list(self._listeners):
            listener(event)

    def _watch(self, debounce_ms: int) -> None:
        from apus.index.media import MEDIA_RULE
        from apus.vault import transcripts
        from apus.vault.scan import NOTE_SUFFIXES
        from apus.watch import watch_notes

        roots = [self.vault, *self.settings.extra_roots()]
        suffixes: tuple[str, ...] = NOTE_SUFFIXES
        if self.settings.search.extra_paths:  # images and audio there are indexed too
            suffixes += tuple(sorted(MEDIA_RULE.suffixes))
        if transcripts.enabled(self.settings.search):  # conversations grow while agents run
            roots += transcripts.roots(self.settings)
            suffixes += (transcripts.SUFFIX,)
        try:
            watch_notes(
                roots,
                self._changed_on_disk,
                stop=self._stop_watching,
                debounce_ms=debounce_ms,
                suffixes=suffixes,
                on_ready=self._watch_live.set,
            )
        except Exception as exc:  # the index still updates on request; the faces say so
            log.exception("watching %s stopped", self.vault)
            self._tell(WatchStopped(exc))

    # -- transcripts ----------------------------------------------------------------------

    def sessions_search(
        self, query: str, *, asker: Asker | None = None, limit: int = 10
    ) -> list[TranscriptMatch]:
        """Messages of the visible transcripts holding every word and phrase of `query`."""
        with self._read_store() as store:
            return search_transcripts(self.settings, store, query, asker or Asker(), limit)

    def sessions_history(
        self,
        session_key: str,
        *,
        asker: Asker | None = None,
        around: str | None = None,
        line: int = 0,
        limit: int = DEFAULT_HISTORY,
    ) -> ConversationWindow:
        """Messages of a visible session, around a time or a file line, else the latest."""
        with self._read_store() as store:
            return transcript_history(
                self.settings,
                store,
                session_key,
                asker or Asker(),
                around=around,
                line=line,
                limit=limit,
            )

    def _scoped(self, options: SearchOptions | None) -> SearchOptions:
        """Transcripts only while they are on, and only those the asker may see."""
        options = options or SearchOptions()
        return replace(options, filters=scoped_filter(self.settings, options.filters))


def _left_behind(response: SearchResponse, error: ApusError) -> SearchResponse:
    """The answer from a keyword index that could not be brought up to date, saying why and
    the fix on its keyword leg; the error itself when that index answered nothing."""
    keyword = response.legs.get("keyword")
    if keyword is None:
        return response
    if not keyword.ran:
        if not response.hits:
            raise error  # nothing indexed could answer instead
        return response
    behind = replace(
        keyword,
        reason=f"the keyword index could not be brought up to date: {error.reason}",
        fix=error.fix,
    )
    return replace(response, legs={**response.legs, "keyword": behind})
