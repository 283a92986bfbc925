"""The Searcher: runs the keyword and vector legs, merges and ranks, returns typed results.

It only reads: a keyword index that is missing, damaged or behind the store is reported
(`keyword_needs_repair`) for the session to repair through the Indexer, never rebuilt here.
Whether a failing provider raises or leaves keyword results alone is decided in one place,
`_vector_leg`, from the `strict` flag the session passes in.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from apus.config import Settings
from apus.embed.base import EmbeddingError
from apus.errors import ProviderUnavailableError
from apus.index.keyword import KeywordIndex
from apus.index.media import MediaFacts, is_media_path, media_facts
from apus.index.note_filter import NoteFilter
from apus.index.store import ChunkRecord, Store
from apus.index.vectors import VectorIndexError
from apus.search.hybrid import MergedScore, leg_weights, merge_legs
from apus.search.mmr import mmr_order
from apus.search.ranking import (
    PathTier,
    PathTierer,
    RankFactors,
    final_score,
    importance_factor,
    normalise_path,
    rank_key,
    readable_score,
    recency_factor,
    recency_weight,
    select_with_min_score,
)
from apus.search.snippet import make_snippet
from apus.search.vector_leg import NOT_INDEXED, NOT_INDEXED_FIX, VectorLeg
from apus.vault.annotations import annotations_in, without_annotations
from apus.vault.markdown import heading
from apus.vault.text import fold, query_terms, snippet_tokens

Mode = Literal["hybrid", "keyword", "vector"]
# A long note's first chunks stand for it when looking for related notes: each is one FAISS
# scan, and past a dozen passages a note's topic is already clear.
_RELATED_CHUNKS = 12
# The fix shown when the keyword index cannot answer until a sync rebuilds it.
_REBUILD_FIX = "apus memory index"


@dataclass(frozen=True)
class SearchOptions:
    mode: Mode = "hybrid"
    limit: int | None = None  # None: memory.search.query.maxResults
    mmr: bool | None = None  # None: from config
    recency: bool | None = None
    min_score: float | None = None
    filters: NoteFilter = field(default_factory=NoteFilter)


@dataclass(frozen=True)
class LegReport:
    ran: bool
    reason: str = ""  # why it did not run, or a caveat ("index update in progress")
    fix: str = ""  # what makes it run, when something can
    candidates: int = 0
    ms: float = 0.0


@dataclass(frozen=True)
class Explanation:
    vector_raw: float | None
    vector_norm: float
    text_raw: float | None
    text_norm: float
    merged: float  # the relevance minScore is applied to
    recency: float  # the note's decay: 0.5 every half-life, 1.0 for evergreen notes
    recency_weight: float  # what the decay multiplies the score by (never below the floor)
    importance: float
    tier: str
    mmr_position: int | None  # 1-based position chosen by MMR; None when MMR was off


@dataclass(frozen=True)
class SearchHit:
    chunk_id: int
    path: str
    title: str
    start_line: int
    end_line: int
    heading: str
    score: float
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    note_date: str | None
    legs: tuple[str, ...]  # which legs found it: "keyword", "vector", "path"
    explain: Explanation
    source: str = "memory"
    media: MediaFacts | None = None  # an image or audio file: its type and size

    @property
    def citation(self) -> str:
        """Where the passage is, as agents cite it: `path#L12-L30`."""
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


@dataclass(frozen=True)
class SearchResponse:
    query: str
    mode: Mode
    hits: list[SearchHit]
    legs: dict[str, LegReport] = field(default_factory=dict)
    ms: float = 0.0
    final: bool = True  # False for keyword results that merged results will replace


@dataclass(frozen=True)
class _KeywordHealth:
    ready: bool
    generation: int
    reason: str = ""
    fix: str = ""
    repair: bool = False  # unusable, damaged or behind the store: a sync should rebuild it


@dataclass
class _Candidate:
    chunk: ChunkRecord
    score: MergedScore[int] | None
    recency: float
    recency_weight: float
    importance: float
    tier: PathTier
    final: float
    keyword_match: bool
    mmr_position: int | None = None

    @property
    def relevance(self) -> float:
        """The merged score before recency and importance: what `minScore` is applied to."""
        return self.score.merged if self.score is not None else 0.0


@dataclass(frozen=True)
class _VectorStart:
    """The vector leg of one query: running (future), or why not, and a strict failure."""

    future: Future[tuple[dict[int, float] | None, LegReport]] | None
    report: LegReport
    failure: ProviderUnavailableError | None = None


@dataclass(frozen=True)
class Admitted:
    """What a filter lets through: its notes (file ids) and their chunks."""

    files: frozenset[int]
    chunks: np.ndarray  # int64 chunk ids, for FAISS's selector


@dataclass(frozen=True)
class _Legs:
    """What the legs of one query returned (None: that leg did not run)."""

    text: dict[int, float] | None
    vector: dict[int, float] | None
    reports: dict[str, LegReport]
    admitted: Admitted | None = None  # None: no filter


class Searcher:
    """Answers queries against one vault's index. Thread-safe; cheap to call repeatedly."""

    def __init__(
        self,
        settings: Settings,
        *,
        vector_leg: VectorLeg | None = None,
        strict: bool = False,
        today: Callable[[], dt.date] = dt.date.today,
    ) -> None:
        self.settings = settings
        self.index_dir = settings.index_dir()
        self.vector_leg = vector_leg
        self.strict = strict
        self._today = today
        self._keyword = KeywordIndex(self.index_dir)
        self._store: Store | None = None
        self._store_lock = threading.Lock()
        self._health: tuple[tuple[int, int | None], _KeywordHealth] | None = None
        self._damaged_stamp: int | None = None
        self._vectors_damaged = False
        self._names: tuple[int, dict[str, list[int]]] | None = None
        self._admitted: tuple[tuple[int, NoteFilter], Admitted] | None = None
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="apus-leg")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._keyword.close()
        if self.vector_leg is not None:
            self.vector_leg.close()
        with self._store_lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- searching ----------------------------------------------------------------------

    def search(self, query: str, options: SearchOptions | None = None) -> SearchResponse:
        """The complete answer (both legs, run in parallel, when the mode asks for both)."""
        *_, last = self.search_stages(query, options, progressive=False)
        return last

    def search_stages(
        self, query: str, options: SearchOptions | None = None, *, progressive: bool = True
    ) -> Iterator[SearchResponse]:
        """Keyword results first, then merged results when the vector leg can add to them.

        The vector leg starts at once on the pool; the keyword leg runs once and its hits are
        reused by the merged answer, so a query costs one keyword leg, whatever is yielded.
        """
        options = options or SearchOptions()
        started = time.perf_counter()
        query = query.strip()
        if not query:
            yield SearchResponse(query, options.mode, [])
            return
        terms = query_terms(query)
        k = self.settings.search.query.candidates
        admitted = self.admitted(options.filters)
        start = self._start_vector_leg(query, k, options.mode, admitted)
        text_hits, keyword_report = self._keyword_leg(terms, k, options.mode, admitted)
        reports = {"keyword": keyword_report, "vector": start.report}
        two_passes = progressive and options.mode == "hybrid"
        if two_passes:
            shown = reports if start.future is None else {"keyword": keyword_report}
            first = _Legs(text_hits, None, shown, admitted)
            keyword_only = replace(options, mode="keyword")
            yield self._response(query, terms, first, keyword_only, started, start.future is None)
        if start.failure is not None:
            raise start.failure
        if start.future is None:
            if not two_passes:
                legs = _Legs(text_hits, None, reports, admitted)
                yield self._response(query, terms, legs, options, started)
            return
        vector_hits, reports["vector"] = start.future.result()
        legs = _Legs(text_hits, vector_hits, reports, admitted)
        yield self._response(query, terms, legs, options, started)

    def admitted(self, filters: NoteFilter) -> Admitted | None:
        """The notes and chunks a filter lets through (None: it lets everything through);
        kept until the store changes, so a burst of keystrokes asks SQLite once."""
        if not filters.narrows and not self._with_store(
            lambda s: s.holds_other_sources(filters.sources), False
        ):
            return None  # a default filter narrows only while transcripts are indexed too

        def compute(store: Store) -> Admitted:
            key = (store.generation(), filters)
            if self._admitted is None or self._admitted[0] != key:
                files = store.file_ids_matching(filters)
                chunks = np.asarray(store.chunk_ids_of_files(sorted(files)), dtype=np.int64)
                self._admitted = (key, Admitted(frozenset(files), chunks))
            return self._admitted[1]

        empty = Admitted(frozenset(), np.zeros(0, dtype=np.int64))
        return self._with_store(compute, empty)  # type: ignore[return-value]

    def _response(
        self,
        query: str,
        terms: list[str],
        legs: _Legs,
        options: SearchOptions,
        started: float,
        final: bool = True,
    ) -> SearchResponse:
        hits = self._rank(query, terms, legs, options)
        elapsed = (time.perf_counter() - started) * 1000
        return SearchResponse(query, options.mode, hits, legs.reports, elapsed, final)

    # -- related notes ------------------------------------------------------------------

    def related(self, path: str, limit: int, filters: NoteFilter | None = None) -> SearchResponse:
        """Notes most like the indexed note at `path`, itself excluded, one hit per note:
        its chunks' stored vectors against the index (nothing is embedded); without usable
        vectors, a keyword search for its title and headings."""
        started = time.perf_counter()
        filters = replace(filters or NoteFilter(), exclude_paths=(path,))
        own = self._with_store(lambda s: _note_chunks(s, path), [])
        admitted = self.admitted(filters)
        k = self.settings.search.query.candidates
        options = SearchOptions(limit=limit, mmr=False, recency=False, min_score=0.0)
        usable = self.vector_leg is not None and self.vector_leg.availability().usable
        if usable and own:
            assert self.vector_leg is not None
            found = self.vector_leg.neighbours([c.id for c in own][:_RELATED_CHUNKS], k + len(own))
            hits = _best_per_note(found, admitted, self._with_store)
            legs = _Legs(None, hits, {"vector": LegReport(True, "", "", len(hits))}, admitted)
            options = replace(options, mode="vector")
        else:
            words = _title_and_headings(own)
            text, report = self._keyword_leg(query_terms(words), k, "keyword", admitted)
            hits = _best_per_note(text or {}, admitted, self._with_store)
            legs = _Legs(hits, None, {"keyword": report}, admitted)
            options = replace(options, mode="keyword")
        ranked = self._rank("", [], legs, options)
        elapsed = (time.perf_counter() - started) * 1000
        return SearchResponse(path, options.mode, ranked, legs.reports, elapsed)

    # -- the keyword leg ----------------------------------------------------------------

    def keyword_ready(self) -> tuple[bool, str]:
        """Whether keyword search can answer over everything the store holds, and if not,
        why (missing, damaged, or behind the store while a sync writes)."""
        health = self._keyword_health()
        return health.ready and not health.repair, health.reason

    def keyword_behind(self) -> bool:
        """Whether the keyword index serves, only behind the store: a writer is between a
        store commit and its keyword update (a first index mirrors batches in bursts)."""
        health = self._keyword_health()
        return health.ready and health.repair

    def keyword_needs_repair(self) -> bool:
        """Whether the keyword index is missing, damaged or behind the store."""
        return self._keyword_health().repair

    def keyword_damaged(self) -> bool:
        """Whether a query failed on the current keyword index although it opens: only a
        rebuild repairs that, whatever its stamp says."""
        stamp = self._keyword.stamp_signature()
        return stamp is not None and stamp == self._damaged_stamp

    def _keyword_health(self) -> _KeywordHealth:
        generation = self._with_store(lambda s: s.generation(), None)
        if generation is None:
            return _KeywordHealth(False, 0, NOT_INDEXED, NOT_INDEXED_FIX)
        stamp = self._keyword.stamp_signature()
        signature = (int(generation), stamp)  # type: ignore[call-overload]
        if self._health is not None and self._health[0] == signature:
            # Opening the index to check it costs more than a search: once per change is enough.
            return self._health[1]
        if self._health is not None and self._health[0][1] != stamp:
            # Rewritten by a writer (a rebuild swaps the folder): drop the open reader.
            self._keyword.close()
        if stamp is not None and stamp == self._damaged_stamp:
            health = _KeywordHealth(False, 0, "keyword index damaged", _REBUILD_FIX, repair=True)
        else:
            health = self._check_keyword(int(generation))  # type: ignore[call-overload]
        self._health = (signature, health)
        return health

    def _check_keyword(self, generation: int) -> _KeywordHealth:
        state = self._keyword.state()
        if state.usable and state.generation == generation:
            return _KeywordHealth(True, generation)
        if state.usable:
            # A writer is between a store commit and the keyword update, or died there:
            # serve its last complete state and let a sync catch up.
            return _KeywordHealth(
                True, int(state.generation or 0), "index update in progress", repair=True
            )
        return _KeywordHealth(False, 0, state.reason, _REBUILD_FIX, repair=True)

    def _keyword_leg(
        self, terms: list[str], k: int, mode: Mode, admitted: Admitted | None
    ) -> tuple[dict[int, float] | None, LegReport]:
        if mode == "vector":
            return None, LegReport(False, "not requested (--mode vector)")
        started = time.perf_counter()
        health = self._keyword_health()
        if not health.ready:
            return None, LegReport(False, health.reason, health.fix)
        try:
            allowed = None if admitted is None else admitted.chunks
            hits = dict(self._keyword.search(terms, k, health.generation, allowed))
        except Exception as exc:  # damage that opening the index did not show
            self._damaged_stamp = self._keyword.stamp_signature()
            self._health = None
            reason = f"keyword index damaged ({type(exc).__name__})"
            return None, LegReport(False, reason, _REBUILD_FIX)
        ms = (time.perf_counter() - started) * 1000
        return hits, LegReport(True, health.reason, "", len(hits), ms)

    # -- the vector leg -----------------------------------------------------------------

    def _start_vector_leg(
        self, query: str, k: int, mode: Mode, admitted: Admitted | None
    ) -> _VectorStart:
        """Start the query embedding now if the leg can answer; else say why not (and, when
        the provider itself failed and the settings forbid falling back, the error to raise
        once the keyword results are out)."""
        if mode == "keyword":
            return _VectorStart(None, LegReport(False, "not requested (--mode keyword)"))
        if not self.settings.search.query.hybrid.enabled:
            return _VectorStart(None, LegReport(False, "hybrid search is disabled in config"))
        if self.vector_leg is None:
            return _VectorStart(None, LegReport(False, "embeddings are off (provider = none)"))
        available = self.vector_leg.availability()
        if available.usable:
            allowed = None if admitted is None else admitted.chunks
            future = self._pool.submit(self._vector_leg, query, k, allowed)
            return _VectorStart(future, LegReport(False, "pending"))
        failure = None
        if available.provider_failed and self.strict:
            failure = self._unavailable(available.reason, available.fix)
        return _VectorStart(None, LegReport(False, available.reason, available.fix), failure)

    def _vector_leg(
        self, query: str, k: int, allowed: np.ndarray | None
    ) -> tuple[dict[int, float] | None, LegReport]:
        assert self.vector_leg is not None
        started = time.perf_counter()
        try:
            hits = self.vector_leg.search(query, k, allowed)
        except EmbeddingError as exc:
            if self.strict:
                raise self._unavailable(exc.reason, exc.fix or "") from exc
            return None, LegReport(False, exc.reason, exc.fix or "")
        except VectorIndexError as exc:  # the FAISS file: a sync rebuilds it from the store
            self._vectors_damaged = True
            return None, LegReport(False, exc.message, exc.fix or "")
        self._vectors_damaged = False
        return hits, LegReport(True, "", "", len(hits), (time.perf_counter() - started) * 1000)

    def vectors_need_repair(self) -> bool:
        """Whether the last vector search found vectors.faiss missing or damaged."""
        return self._vectors_damaged

    def _unavailable(self, reason: str, fix: str) -> ProviderUnavailableError:
        """The one place where a failing provider becomes an error instead of a caveat."""
        return ProviderUnavailableError(
            f"The embedding provider `{self.settings.search.provider}` is unavailable: {reason}",
            fix=fix or 'apus memory status --deep  (or set memory.search.provider = "none")',
        )

    # -- ranking ------------------------------------------------------------------------

    def _rank(
        self, query: str, terms: list[str], legs: _Legs, options: SearchOptions
    ) -> list[SearchHit]:
        hybrid = self.settings.search.query.hybrid
        limit = options.limit or self.settings.search.query.max_results
        candidates = self._candidates(query, legs, options)
        chosen = self._select(candidates, options, limit)
        use_mmr = hybrid.mmr.enabled if options.mmr is None else options.mmr
        if use_mmr and len(chosen) > 1:
            chosen = self._diversify(chosen, hybrid.mmr.lambda_)
        query_tokens = frozenset(terms)
        return self._with_media_facts([_hit(c, query_tokens, legs.vector) for c in chosen])

    def _with_media_facts(self, hits: list[SearchHit]) -> list[SearchHit]:
        """Hits on images and audio carry their type and size (the faces show both)."""
        if not any(is_media_path(hit.path) for hit in hits):
            return hits

        def facts(store: Store) -> list[SearchHit]:
            with_facts = []
            for hit in hits:
                record = store.file_by_path(hit.path) if is_media_path(hit.path) else None
                media = media_facts(hit.path, record.size) if record is not None else None
                with_facts.append(replace(hit, media=media) if media else hit)
            return with_facts

        return self._with_store(facts, hits)  # type: ignore[return-value]

    def _candidates(self, query: str, legs: _Legs, options: SearchOptions) -> list[_Candidate]:
        """Every chunk either leg found, plus the notes the query names, with their factors."""
        hybrid = self.settings.search.query.hybrid
        vector_weight, text_weight = leg_weights(hybrid.vector_weight, hybrid.text_weight, query)
        merged = merge_legs(
            legs.vector,
            legs.text,
            vector_weight,
            text_weight,
            method=hybrid.merge,
            rrf_k=hybrid.rrf_k,
        )
        ids = list(merged)
        named = self._named_chunk_ids(query, legs.admitted)
        ids.extend(i for i in named if i not in merged)
        chunks: dict[int, ChunkRecord] = self._with_store(  # type: ignore[assignment]
            lambda s: s.chunks_by_id(ids), {}
        )
        today = self._today()
        decay = hybrid.temporal_decay
        use_recency = decay.enabled if options.recency is None else options.recency
        tier_of = PathTierer(query)
        candidates: list[_Candidate] = []
        for chunk_id in ids:
            chunk = chunks.get(chunk_id)
            if chunk is None:  # deleted since the leg ran
                continue
            score = merged.get(chunk_id)
            note_date = dt.date.fromisoformat(chunk.note_date) if chunk.note_date else None
            recency = recency_factor(note_date, today, decay.half_life_days, use_recency)
            factors = RankFactors(
                recency=recency,
                # An entry's own annotation speaks for its passage before the note's.
                importance=importance_factor(
                    annotations_in(chunk.text).importance or chunk.importance
                ),
                tier=tier_of(chunk.path),
                recency_weight=recency_weight(recency, decay.floor),
            )
            candidates.append(
                _Candidate(
                    chunk=chunk,
                    score=score,
                    recency=factors.recency,
                    recency_weight=factors.recency_weight,
                    importance=factors.importance,
                    tier=factors.tier,
                    final=final_score(score.merged if score else 0.0, factors),
                    keyword_match=(score is not None and score.text_raw is not None)
                    or chunk_id in named,
                )
            )
        candidates.sort(key=lambda c: rank_key(c.final, c.tier))
        return candidates

    def _select(
        self, candidates: list[_Candidate], options: SearchOptions, limit: int
    ) -> list[_Candidate]:
        """Path-tier matches first, then the rest through `minScore` (keyword matches kept),
        which judges relevance alone: recency and importance only order what passes."""
        config = self.settings.search.query
        min_score = config.min_score if options.min_score is None else options.min_score
        tiered = [c for c in candidates if c.tier > PathTier.NONE]
        rest = [c for c in candidates if c.tier == PathTier.NONE]
        return tiered[:limit] + select_with_min_score(
            rest,
            score=lambda c: c.relevance,
            is_keyword_match=lambda c: c.keyword_match,
            min_score=min_score,
            limit=max(0, limit - len(tiered)),
        )

    @staticmethod
    def _diversify(chosen: list[_Candidate], lam: float) -> list[_Candidate]:
        """MMR over body relevance; path-tier hits stay on top."""
        head = [c for c in chosen if c.tier > PathTier.NONE]
        tail = mmr_order(
            [c for c in chosen if c.tier == PathTier.NONE],
            relevance=lambda c: c.final,
            tokens=lambda c: snippet_tokens(c.chunk.text),
            lam=lam,
        )
        ordered = _best_chunk_first(head + tail)
        for position, candidate in enumerate(ordered, start=1):
            candidate.mmr_position = position
        return ordered

    # -- store access -------------------------------------------------------------------

    def _with_store(self, action: Callable[[Store], object], default: object) -> object:
        with self._store_lock:
            if self._store is None and Store.exists(self.index_dir):
                self._store = Store(self.index_dir, readonly=True)
            return default if self._store is None else action(self._store)

    def _named_chunk_ids(self, query: str, admitted: Admitted | None) -> set[int]:
        """First chunks of the notes whose path, file name or stem is the query."""
        files: list[int] = self._with_store(  # type: ignore[assignment]
            lambda s: self._files_named(s, query), []
        )
        if admitted is not None:
            files = [file_id for file_id in files if file_id in admitted.files]
        if not files:
            return set()
        firsts: dict[int, ChunkRecord] = self._with_store(  # type: ignore[assignment]
            lambda s: s.first_chunk_of_files(files), {}
        )
        return {chunk.id for chunk in firsts.values()}

    def _files_named(self, store: Store, query: str) -> list[int]:
        """File ids named by the query, via a lookup table rebuilt when the store changes."""
        generation = store.generation()
        if self._names is None or self._names[0] != generation:
            table: dict[str, list[int]] = {}
            for path, record in store.files().items():
                folded = fold(path)
                base = folded.rsplit("/", 1)[-1]
                for key in {folded, base, base.rsplit(".", 1)[0]}:
                    table.setdefault(key, []).append(record.id)
            self._names = (generation, table)
        return self._names[1].get(normalise_path(query), [])


def _hit(
    c: _Candidate, query_tokens: frozenset[str], vector_hits: dict[int, float] | None
) -> SearchHit:
    snippet = make_snippet(without_annotations(c.chunk.text), query_tokens)
    score = c.score
    legs = []
    if score is not None and score.text_raw is not None:
        legs.append("keyword")
    if vector_hits is not None and c.chunk.id in vector_hits:
        legs.append("vector")
    if c.tier > PathTier.NONE:
        legs.append("path")
    return SearchHit(
        chunk_id=c.chunk.id,
        path=c.chunk.path,
        title=c.chunk.title,
        start_line=c.chunk.start_line,
        end_line=c.chunk.end_line,
        heading=c.chunk.heading,
        score=readable_score(c.final),
        snippet=snippet.text,
        highlights=snippet.highlights,
        note_date=c.chunk.note_date,
        source=c.chunk.source,
        legs=tuple(legs),
        explain=Explanation(
            vector_raw=score.vector_raw if score else None,
            vector_norm=score.vector_norm if score else 0.0,
            text_raw=score.text_raw if score else None,
            text_norm=score.text_norm if score else 0.0,
            merged=score.merged if score else 0.0,
            recency=c.recency,
            recency_weight=c.recency_weight,
            importance=c.importance,
            tier=c.tier.name.lower(),
            mmr_position=c.mmr_position,
        ),
    )


def _title_and_headings(chunks: list[ChunkRecord]) -> str:
    """A note's title and every heading in it: what the note says it is about."""
    if not chunks:
        return ""
    found = [chunks[0].title]
    for chunk in chunks:
        for line in chunk.text.splitlines():
            parsed = heading(line)
            if parsed is not None and parsed[1]:
                found.append(parsed[1])
    return " ".join(dict.fromkeys(found))


def _note_chunks(store: Store, path: str) -> list[ChunkRecord]:
    record = store.file_by_path(path)
    return [] if record is None else list(store.iter_chunks([record.id]))


def _best_per_note(
    scores: dict[int, float],
    admitted: Admitted | None,
    with_store: Callable[[Callable[[Store], object], object], object],
) -> dict[int, float]:
    """Each admitted note's best chunk and its score: related notes are notes, not passages."""
    if admitted is not None:
        allowed = set(admitted.chunks.tolist())
        scores = {chunk: score for chunk, score in scores.items() if chunk in allowed}
    chunks: dict[int, ChunkRecord] = with_store(  # type: ignore[assignment]
        lambda s: s.chunks_by_id(list(scores)), {}
    )
    best: dict[int, tuple[int, float]] = {}
    for chunk_id, score in scores.items():
        chunk = chunks.get(chunk_id)
        if chunk is not None and score > best.get(chunk.file_id, (0, float("-inf")))[1]:
            best[chunk.file_id] = (chunk_id, score)
    return dict(best.values())


def _best_chunk_first(ordered: list[_Candidate]) -> list[_Candidate]:
    """Within the slots one note holds, put its chunks in score order: MMR may move a note's
    second passage up, but a note should lead with its best one."""
    slots: dict[str, list[int]] = {}
    for index, candidate in enumerate(ordered):
        slots.setdefault(candidate.chunk.path, []).append(index)
    result = list(ordered)
    for indexes in slots.values():
        if len(indexes) > 1:
            ranked = sorted((ordered[i] for i in indexes), key=lambda c: rank_key(c.final, c.tier))
            for index, candidate in zip(indexes, ranked, strict=True):
                result[index] = candidate
    return result
