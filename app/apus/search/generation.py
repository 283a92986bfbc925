"""What a Searcher keeps about the store generation it last saw: one small object, replaced
whole when the generation changes, that many threads read and fill at once.

Everything here is a fact about the index as of one generation (the admitted sets of recent
filters, whether other sources are stored, the keyword index's health as it opens, the chunk
and path tables), never something one query found out for the next: what a query learns
that needs repair (damage only a search shows, a vector file to rebuild) travels on its own
answer (`LegReport.repair`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from apus.index.note_filter import NoteFilter
from apus.search.chunk_table import ChunkTable
from apus.search.path_words import PathWords

# Admitted sets kept per generation: each client of a shared server may filter its own way
# (its paths, its transcripts), and a set is read again only when a filter is not among these.
ADMITTED_KEPT = 16

Tables = tuple[PathWords, ChunkTable]


@dataclass(frozen=True)
class KeywordHealth:
    """Whether the keyword index can answer for this generation, and whether a sync should
    rebuild or catch it up (`repair`: missing, unopenable or behind the store)."""

    ready: bool
    generation: int  # the store generation it reflects
    reason: str = ""
    fix: str = ""
    repair: bool = False


@dataclass(frozen=True)
class Admitted:
    """What a filter lets through: its notes (file ids) and their chunks."""

    files: frozenset[int]
    chunks: np.ndarray  # int64 chunk ids, for FAISS's selector


class Generation:
    """The facts of one store generation, filled in as searches need them. Thread-safe:
    each value is made once (under the generation's lock) and then only read."""

    def __init__(self, number: int, path_words_before: PathWords | None) -> None:
        self.number = number
        self._lock = threading.Lock()
        # The path table of an earlier generation: the next one is made from it (only the
        # paths that changed are read again).
        self._path_words_before = path_words_before
        self._searches = 0
        self._tables: Tables | None = None
        self._admitted: OrderedDict[NoteFilter, Admitted] = OrderedDict()
        self._other_sources: dict[tuple[str, ...], bool] = {}
        self._keyword: dict[int | None, KeywordHealth] = {}

    @property
    def built(self) -> bool:
        """Whether the generation's tables are built (from its second search on)."""
        return self._tables is not None

    @property
    def path_words(self) -> PathWords | None:
        """This generation's path table once built, else the last one built before it."""
        tables = self._tables
        return self._path_words_before if tables is None else tables[0]

    def tables(self, build: Callable[[PathWords | None], Tables]) -> Tables | None:
        """The generation's tables: None at its first search (which weighs its candidates
        one by one), built at its second with `build(the path table before)`, then kept."""
        with self._lock:
            self._searches += 1
            if self._tables is None and self._searches > 1:
                self._tables = build(self._path_words_before)
            return self._tables

    def admitted(self, filters: NoteFilter, make: Callable[[], Admitted]) -> Admitted:
        """What `filters` admit, made at most once while they are among the latest asked."""
        with self._lock:
            found = self._admitted.get(filters)
            if found is None:
                found = self._admitted[filters] = make()
                while len(self._admitted) > ADMITTED_KEPT:
                    self._admitted.popitem(last=False)
            self._admitted.move_to_end(filters)
            return found

    def other_sources(self, sources: tuple[str, ...], make: Callable[[], bool]) -> bool:
        """Whether files of a source outside `sources` are stored, asked once per
        generation."""
        with self._lock:
            found = self._other_sources.get(sources)
            if found is None:
                found = self._other_sources[sources] = make()
            return found

    def keyword_health(
        self, stamp: int | None, check: Callable[[], KeywordHealth]
    ) -> KeywordHealth:
        """The keyword index's health at this generation and index `stamp` (it changes when
        the index is rewritten): checked once, since opening the index costs more than a
        search."""
        with self._lock:
            found = self._keyword.get(stamp)
            if found is None:
                found = self._keyword[stamp] = check()
            return found


class GenerationCache:
    """The Generation of the store's current number: a new one replaces the old whole (it
    inherits only the old path table, to update from)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._current: Generation | None = None

    @property
    def latest(self) -> Generation | None:
        """The generation the last search saw (None before any)."""
        return self._current

    def of(self, number: int) -> Generation:
        with self._lock:
            current = self._current
            if current is None or current.number != number:
                before = None if current is None else current.path_words
                current = self._current = Generation(number, before)
            return current
