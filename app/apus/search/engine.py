"""The Searcher: runs the keyword and vector legs, merges and ranks, returns typed results.

A search (`search_stages`) runs these steps, marked "Step N" in its body:

1. Read the query once (`ParsedQuery`: its words, folded terms, whether it looks a thing up
   by name, its path form) and resolve the options once (`ResolvedOptions`, and "today"):
   no step after this reads a setting or parses the query again.
2. Narrow: the notes and chunks the filters admit (kept until the store changes).
3. Start the vector leg on its threads (embed the query, search FAISS), or say why it cannot.
4. Run the keyword leg (BM25 over the admitted chunks) while the query embeds.
5. Progressive hybrid only: rank the keyword hits alone (as step 8 does) and yield them.
6. Raise a strict provider failure, now that the keyword results are out.
7. Wait for the vector leg.
8. Rank (`_rank`): merge the legs' scores (weights from config, else leaning on exact words
   for an identifier lookup), add the notes the query names, weigh each candidate by
   recency, importance (the agent's own memory weighed up), language and path tier, rerank
   the final answer's top candidates that `minScore` admits (`_reranked`,
   `apus.search.rerank`), select by `minScore`, diversify with MMR (a factor of each score:
   the score a hit shows is the one the list is ordered by), build the hits. What ranking
   learns about a chunk (its record, factors, snippet) and the notes the query names are
   kept for the search (`search/ranking_work.py`): step 8 reuses step 5's. The candidates
   are weighed as one pool of arrays (`search/candidate_pool.py`); the answer's types are
   `search/results.py`.

It only reads, and keeps nothing one query learns for the next: a keyword index that is
missing, damaged or behind the store, a vector file to rebuild, a re-embed that is due are
said on that query's answer (`LegReport.repair`, `SearchResponse.repairs`) for the session to
act on through the Indexer, never repaired here. What it keeps are facts of the store
generation (`search/generation.py`). Whether a failing provider raises or leaves keyword
results alone is decided in one place, `_unavailable`, from the `strict` flag the session
passes in.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from apus.config import Settings
from apus.errors import Problem, ProviderUnavailableError
from apus.index.keyword import KeywordIndex
from apus.index.keyword_freshness import DAMAGED, keyword_freshness
from apus.index.note_filter import NoteFilter
from apus.index.store import ChunkFacts, ChunkRecord, Store
from apus.search.candidate_pool import (
    CandidatePool,
    ChosenCandidate,
    best_chunk_first,
    hit_of,
    set_shown_scores,
)
from apus.search.chunk_table import (
    Candidates,
    ChunkTable,
    language_weights,
    read_candidates,
    weigh,
)
from apus.search.generation import Admitted, GenerationCache, KeywordHealth, Tables
from apus.search.hybrid import leg_weights, merge_legs
from apus.search.mmr import mmr_order
from apus.search.options import Mode, ResolvedOptions, SearchOptions
from apus.search.path_words import PathWords, path_tiers
from apus.search.query import ParsedQuery
from apus.search.ranking import PathTier, select_with_min_score
from apus.search.ranking_work import RankingWork
from apus.search.rerank.stage import Reranker
from apus.search.results import LegReport, Repair, SearchHit, SearchResponse

# The vector leg's modules (embedding, FAISS) and the media of `extraPaths` are imported
# when a search uses them: a one-shot keyword search is a new process that pays for each.
if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from apus.search.rerank.scorer import RerankScorer
    from apus.search.vector_leg import VectorLeg

T = TypeVar("T")
# A note's suffixes (`apus.vault.scan.NOTE_SUFFIXES`, which a test holds this to): a hit on
# any other path may be an image or audio file.
NOTE_SUFFIXES = (".md", ".markdown")
# A long note's first chunks stand for it when looking for related notes: each is one FAISS
# scan, and past a dozen passages a note's topic is already clear.
_RELATED_CHUNKS = 12
# The fix shown when the keyword index cannot answer until a sync rebuilds it.
_REBUILD_FIX = "apus memory index"


@dataclass(frozen=True)
class _VectorStart:
    """The vector leg of one query: running (future), or why not, and a strict failure."""

    future: Future[tuple[dict[int, float] | None, LegReport]] | None
    report: LegReport
    failure: ProviderUnavailableError | None = None
    covered: frozenset[int] | None = None  # a partial vector set: the chunks it holds


@dataclass(frozen=True)
class _Legs:
    """What the legs of one query returned (None: that leg did not run)."""

    text: dict[int, float] | None
    vector: dict[int, float] | None
    reports: dict[str, LegReport]
    covered: frozenset[int] | None = None  # chunks the vector leg knows (None: all)


class Searcher:
    """Answers queries against one vault's index. Thread-safe; cheap to call repeatedly."""

    def __init__(
        self,
        settings: Settings,
        *,
        vector_leg: VectorLeg | None = None,
        vector_leg_source: Callable[[], VectorLeg | None] | None = None,
        strict: bool = False,
        today: Callable[[], dt.date] = dt.date.today,
        reranker: Reranker | None = None,
    ) -> None:
        """`vector_leg` (closed with the searcher), or `vector_leg_source` to make it when a
        search first needs it (a keyword search never does): a factory that only makes the
        leg, whose owner closes it. `reranker`: the second stage shared with other searchers
        (else one made from the settings, loading its model at the first search that
        reranks)."""
        self.settings = settings
        self.index_dir = settings.index_dir()
        self._leg = vector_leg
        self._owns_leg = vector_leg is not None
        self._leg_source = vector_leg_source
        self._leg_lock = threading.Lock()
        self.strict = strict
        self._today = today
        self._keyword = KeywordIndex(self.index_dir)
        self._store: Store | None = None
        self._store_lock = threading.Lock()
        self._generations = GenerationCache()
        # The vector leg's threads, made for the first query embedding: a keyword search never
        # needs one.
        self._executor: ThreadPoolExecutor | None = None
        self._owns_reranker = reranker is None
        self.reranker = reranker or Reranker(lambda: _scorer_of(settings))

    @property
    def vector_leg(self) -> VectorLeg | None:
        """The vector leg (None: embeddings are off), made by its source on first use."""
        with self._leg_lock:
            if self._leg_source is not None:
                self._leg, self._leg_source = self._leg_source(), None
            return self._leg

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
        self._keyword.close()
        if self._leg is not None and self._owns_leg:
            self._leg.close()
        if self._owns_reranker:
            self.reranker.close()
        with self._store_lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- searching ----------------------------------------------------------------------

    def search(
        self, query: str | ParsedQuery, options: SearchOptions | None = None
    ) -> SearchResponse:
        """The complete answer (both legs, run in parallel, when the mode asks for both)."""
        *_, last = self.search_stages(query, options, progressive=False)
        return last

    def search_stages(
        self,
        query: str | ParsedQuery,
        options: SearchOptions | None = None,
        *,
        progressive: bool = True,
    ) -> Iterator[SearchResponse]:
        """Keyword results first, then merged results when the vector leg can add to them.

        The vector leg starts at once on the pool; the keyword leg runs once and its hits are
        reused by the merged answer, so a query costs one keyword leg, whatever is yielded.
        The steps are the module docstring's.
        """
        started = time.perf_counter()
        # Step 1: the query read once, the options resolved once.
        parsed = query if isinstance(query, ParsedQuery) else ParsedQuery.parse(query)
        search = self.settings.search
        resolved = (options or SearchOptions()).resolve(search.query, search.rerank)
        if not parsed.text:
            yield SearchResponse(parsed.text, resolved.mode, [])
            return
        # Step 2: what the filters admit.
        admitted = self.admitted(resolved.filters)
        work = RankingWork(parsed, resolved, admitted, self._today())
        # Step 3: the vector leg starts (or says why it cannot).
        start = self._start_vector_leg(parsed.text, resolved, admitted)
        # Step 4: the keyword leg, while the query embeds.
        text_hits, keyword_report = self._keyword_leg(
            parsed.terms, resolved.candidates, resolved.mode, admitted
        )
        reports = {"keyword": keyword_report, "vector": start.report}
        two_passes = progressive and resolved.mode == "hybrid"
        # Step 5: the keyword hits ranked alone, shown while the vector leg runs.
        if two_passes:
            shown = reports if start.future is None else {"keyword": keyword_report}
            first = _Legs(text_hits, None, shown)
            yield self._response(work, first, "keyword", started, start.future is None)
        # Step 6: a provider that must not fall back fails the search here.
        if start.failure is not None:
            raise start.failure
        if start.future is None:
            if not two_passes:
                legs = _Legs(text_hits, None, reports)
                yield self._response(work, legs, resolved.mode, started)
            return
        # Step 7: the vector leg's hits.
        vector_hits, reports["vector"] = start.future.result()
        if start.covered is not None or start.report.repair is not None:
            repair = reports["vector"].repair or start.report.repair
            reports["vector"] = replace(
                reports["vector"], coverage=start.report.coverage, repair=repair
            )
        # Step 8: both legs merged and ranked, reusing what step 5 learned.
        legs = _Legs(text_hits, vector_hits, reports, start.covered)
        yield self._response(work, legs, resolved.mode, started)

    def admitted(self, filters: NoteFilter) -> Admitted | None:
        """The notes and chunks a filter lets through (None: it lets everything through);
        kept until the store changes, so a burst of keystrokes asks SQLite once."""
        if not filters.narrows and not self._with_store(
            lambda s: self._holds_other_sources(s, filters.sources), False
        ):
            return None  # a default filter narrows only while transcripts are indexed too

        def compute(store: Store) -> Admitted:
            def read() -> Admitted:
                files = store.file_ids_matching(filters)
                chunks = np.asarray(store.chunk_ids_of_files(sorted(files)), dtype=np.int64)
                return Admitted(frozenset(files), chunks)

            return self._generations.of(store.generation()).admitted(filters, read)

        empty = Admitted(frozenset(), np.zeros(0, dtype=np.int64))
        return self._with_store(compute, empty)

    def _holds_other_sources(self, store: Store, sources: tuple[str, ...]) -> bool:
        """Whether the store holds files of a source not in `sources`: a scan of every file,
        so asked once per store generation (every commit that adds files bumps it)."""
        generation = self._generations.of(store.generation())
        return generation.other_sources(sources, lambda: store.holds_other_sources(sources))

    def _response(
        self, work: RankingWork, legs: _Legs, mode: Mode, started: float, final: bool = True
    ) -> SearchResponse:
        hits = self._rank(work, legs, rerank=final)
        reports = legs.reports
        if final and work.rerank is not None:
            done = work.rerank.report
            rerank = LegReport(done.ran, done.reason, done.fix, done.candidates, done.ms)
            reports = {**reports, "rerank": rerank}
        elapsed = (time.perf_counter() - started) * 1000
        return SearchResponse(work.query.text, mode, hits, reports, elapsed, final)

    # -- related notes ------------------------------------------------------------------

    def related(self, path: str, limit: int, filters: NoteFilter | None = None) -> SearchResponse:
        """Notes most like the indexed note at `path`, itself excluded, one hit per note:
        its chunks' stored vectors against the index (nothing is embedded); without usable
        vectors, a keyword search for its title and headings."""
        started = time.perf_counter()
        filters = replace(filters or NoteFilter(), exclude_paths=(path,))
        own: list[ChunkRecord] = self._with_store(lambda s: _note_chunks(s, path), [])
        admitted = self.admitted(filters)
        options = SearchOptions(limit=limit, mmr=False, recency=False, min_score=0.0)
        resolved = options.resolve(self.settings.search.query)
        k = resolved.candidates
        leg = self.vector_leg
        if leg is not None and leg.availability().usable and own:
            found = leg.neighbours([c.id for c in own][:_RELATED_CHUNKS], k + len(own))
            hits = self._best_per_note(found, admitted)
            legs = _Legs(None, hits, {"vector": LegReport(True, "", "", len(hits))})
            mode: Mode = "vector"
        else:
            words = ParsedQuery.parse(_title_and_headings(own))
            text, report = self._keyword_leg(words.terms, k, "keyword", admitted)
            hits = self._best_per_note(text or {}, admitted)
            legs = _Legs(hits, None, {"keyword": report})
            mode = "keyword"
        # Ranked as a search for nothing: no words to highlight, no path the query names.
        work = RankingWork(ParsedQuery.parse(""), resolved, admitted, self._today())
        ranked = self._rank(work, legs)
        elapsed = (time.perf_counter() - started) * 1000
        return SearchResponse(path, mode, ranked, legs.reports, elapsed)

    def _best_per_note(
        self, scores: dict[int, float], admitted: Admitted | None
    ) -> dict[int, float]:
        """Each admitted note's best chunk and its score: related notes are notes, not passages."""
        if admitted is not None:
            allowed = set(admitted.chunks.tolist())
            scores = {chunk: score for chunk, score in scores.items() if chunk in allowed}
        files: dict[int, int] = self._with_store(lambda s: s.chunk_files_of(list(scores)), {})
        best: dict[int, tuple[int, float]] = {}
        for chunk_id, score in scores.items():
            file_id = files.get(chunk_id)
            if file_id is not None and score > best.get(file_id, (0, float("-inf")))[1]:
                best[file_id] = (chunk_id, score)
        return dict(best.values())

    # -- the keyword leg ----------------------------------------------------------------

    def keyword_ready(self) -> tuple[bool, str]:
        """Whether keyword search can answer over everything the store holds, and if not,
        why (missing, damaged, or behind the store while a sync writes)."""
        health = self._keyword_health()
        return health.ready and not health.repair, health.reason

    def keyword_needs_repair(self) -> bool:
        """Whether the keyword index is missing, does not open or is behind the store."""
        return self._keyword_health().repair

    def _keyword_health(self) -> KeywordHealth:
        generation: int | None = self._with_store(lambda s: s.generation(), None)
        if generation is None:
            from apus.index.readiness import NOT_INDEXED

            return KeywordHealth(False, 0, NOT_INDEXED.reason, NOT_INDEXED.fix)
        stamp = self._keyword.stamp_signature()
        return self._generations.of(generation).keyword_health(
            stamp, lambda: self._check_keyword(generation)
        )

    def _check_keyword(self, generation: int) -> KeywordHealth:
        """The keyword index's freshness (`index/keyword_freshness.py`) in a search's words."""
        freshness = keyword_freshness(self._keyword, generation, keep_open=True)
        if freshness.current:
            return KeywordHealth(True, generation)
        if freshness.usable:
            # A writer is between a store commit and the keyword update, or died there:
            # serve its last complete state and let a sync catch up.
            behind = int(freshness.generation or 0)
            return KeywordHealth(True, behind, "index update in progress", repair=True)
        return KeywordHealth(False, 0, freshness.reason, _REBUILD_FIX, repair=True)

    def _keyword_leg(
        self, terms: tuple[str, ...], k: int, mode: Mode, admitted: Admitted | None
    ) -> tuple[dict[int, float] | None, LegReport]:
        if mode == "vector":
            return None, LegReport(False, "not requested (--mode vector)")
        started = time.perf_counter()
        health = self._keyword_health()
        repair: Repair | None = "keyword" if health.repair else None
        if not health.ready:
            return None, LegReport(False, health.reason, health.fix, repair=repair)
        try:
            allowed = None if admitted is None else admitted.chunks
            hits = dict(self._keyword.search(list(terms), k, health.generation, allowed))
        except Exception as exc:  # damage that opening the index did not show
            reason = f"{DAMAGED} ({type(exc).__name__})"
            return None, LegReport(False, reason, _REBUILD_FIX, repair="keyword-damaged")
        ms = (time.perf_counter() - started) * 1000
        return hits, LegReport(True, health.reason, "", len(hits), ms, repair=repair)

    # -- the vector leg -----------------------------------------------------------------

    def _leg_executor(self) -> ThreadPoolExecutor:
        """The threads the vector leg runs on, made for the first query embedding."""
        with self._leg_lock:  # searches of many callers may be the first at once
            if self._executor is None:
                from concurrent.futures import ThreadPoolExecutor

                self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="apus-leg")
            return self._executor

    def _start_vector_leg(
        self, query: str, options: ResolvedOptions, admitted: Admitted | None
    ) -> _VectorStart:
        """Start the query embedding now if the leg can answer; else say why not (and, when
        the provider itself failed and the settings forbid falling back, the error to raise
        once the keyword results are out)."""
        if options.mode == "keyword":
            return _VectorStart(None, LegReport(False, "not requested (--mode keyword)"))
        if not options.hybrid:
            return _VectorStart(None, LegReport(False, "hybrid search is disabled in config"))
        leg = self.vector_leg
        if leg is None:
            return _VectorStart(None, LegReport(False, "embeddings are off (provider = none)"))
        available = leg.availability()
        due: Repair | None = "vectors" if available.reembed_due else None
        if available.usable:
            allowed = None if admitted is None else admitted.chunks
            run = self._run_vector_leg
            future = self._leg_executor().submit(run, query, options.candidates, allowed)
            pending = LegReport(False, "pending", coverage=available.coverage, repair=due)
            return _VectorStart(future, pending, covered=available.covered)
        problem = available.problem
        failure = self._unavailable(problem) if available.provider_failed and self.strict else None
        report = LegReport(False, problem.reason, problem.fix, repair=due)
        return _VectorStart(None, report, failure)

    def _run_vector_leg(
        self, query: str, k: int, allowed: np.ndarray | None
    ) -> tuple[dict[int, float] | None, LegReport]:
        """The vector leg's search, on the leg's threads: its hits and report, or, for a
        strict session, the provider's failure raised."""
        from apus.embed.base import EmbeddingError
        from apus.index.vectors import VectorIndexError

        leg = self.vector_leg
        assert leg is not None
        started = time.perf_counter()
        try:
            hits = leg.search(query, k, allowed)
        except EmbeddingError as exc:
            if self.strict:
                raise self._unavailable(exc.problem) from exc
            return None, LegReport(False, exc.reason, exc.fix)
        except VectorIndexError as exc:  # the FAISS file: a sync rebuilds it from the store
            return None, LegReport(False, exc.reason, exc.fix, repair="vectors")
        return hits, LegReport(True, "", "", len(hits), (time.perf_counter() - started) * 1000)

    def _unavailable(self, problem: Problem) -> ProviderUnavailableError:
        """The one place where a failing provider becomes an error instead of a caveat."""
        return ProviderUnavailableError(
            f"The embedding provider `{self.settings.search.provider}` is unavailable: "
            f"{problem.reason}",
            fix=problem.fix
            or 'apus memory status --deep  (or set memory.search.provider = "none")',
        )

    # -- ranking ------------------------------------------------------------------------

    def _rank(self, work: RankingWork, legs: _Legs, rerank: bool = False) -> list[SearchHit]:
        """The legs' hits merged, weighed, (for a final answer) reranked, selected,
        diversified and made into hits."""
        options = work.options
        pool = self._weighed(work, legs)
        if rerank and options.rerank is not None:
            pool = self._reranked(work, pool)
        chosen = self._chosen(work, pool)
        if options.mmr and len(chosen) > 1:
            chosen = self._diversify(work, chosen, options.mmr_lambda)
        else:
            set_shown_scores(chosen, [c.final for c in chosen])
        hits = [
            hit_of(c, work.snippet_of(c.chunk), legs.vector, work.reranked.get(c.chunk.id))
            for c in chosen
        ]
        return self._with_media_facts(work, hits)

    def _reranked(self, work: RankingWork, pool: CandidatePool) -> CandidatePool:
        """The pool with its top candidates reranked: the reranker reads the first
        `rerank.candidates` that `minScore` admits (relevance still judges what is shown)
        and its scores meet their fused relevance; ordering weighs the blend by recency
        and importance as before. On any failure the pool stands as it was."""
        settings = work.options.rerank
        assert settings is not None
        wide = replace(work.options, limit=settings.candidates)
        tiers = pool.tiers.tolist()
        positions = [p for p in self._select(pool, wide) if tiers[p] == PathTier.NONE]
        records = self._records(work, [pool.candidates.ids[p] for p in positions])
        positions = [p for p in positions if pool.candidates.ids[p] in records]
        if not positions:
            return pool
        chunks = [records[pool.candidates.ids[p]] for p in positions]
        at = np.asarray(positions, dtype=np.int64)
        outcome = self.reranker.run(work.query, chunks, pool.relevance[at], settings)
        work.rerank = outcome
        work.reranked = {}
        if outcome.relevance is None or outcome.scores is None:
            return pool
        for p, score, blended in zip(positions, outcome.scores, outcome.relevance, strict=True):
            work.reranked[pool.candidates.ids[p]] = (score, float(blended))
        relevance = pool.relevance.copy()
        relevance[at] = outcome.relevance
        # As `_weighed`: relevance × recency weight × importance × curated × language (the
        # language weights stay those the fused relevance chose).
        weights = pool.weights
        curated = weights.curated if weights.curated is not None else 1.0
        language = weights.language if weights.language is not None else 1.0
        factors = weights.recency_weight * weights.importance * curated * language
        return replace(pool, final=relevance * factors)

    def _with_media_facts(self, work: RankingWork, hits: list[SearchHit]) -> list[SearchHit]:
        """Hits on images and audio carry their type and size (the faces show both)."""
        if all(hit.path.lower().endswith(NOTE_SUFFIXES) for hit in hits):
            return hits  # notes only: the media module is not even loaded
        from apus.index.media import is_media_path, media_facts

        unknown = [h.path for h in hits if is_media_path(h.path) and h.path not in work.media]
        if unknown:

            def facts(store: Store) -> None:
                for path in unknown:
                    record = store.file_by_path(path)
                    found = media_facts(path, record.size) if record is not None else None
                    work.media[path] = found

            self._with_store(facts, None)
        with_facts = []
        for hit in hits:
            media = work.media.get(hit.path) if is_media_path(hit.path) else None
            with_facts.append(replace(hit, media=media) if media else hit)
        return with_facts

    def _weighed(self, work: RankingWork, legs: _Legs) -> CandidatePool:
        """Every chunk either leg found, plus the notes the query names, weighed."""
        options = work.options
        vector_weight, text_weight = leg_weights(
            options.vector_weight, options.text_weight, work.query.identifier_lookup
        )
        merged = merge_legs(
            legs.vector,
            legs.text,
            vector_weight,
            text_weight,
            method=options.merge,
            rrf_k=options.rrf_k,
            vector_known=legs.covered,
        )
        named = self._named_chunk_ids(work)
        ids = list(merged)
        ids.extend(i for i in named if i not in merged)
        candidates, paths = self._candidates(work, ids)
        scores = [merged.get(chunk_id) for chunk_id in candidates.ids]
        relevance = np.fromiter(
            (0.0 if s is None else s.merged for s in scores), np.float64, len(scores)
        )
        keyword = [
            (s is not None and s.text_raw is not None) or chunk_id in named
            for chunk_id, s in zip(candidates.ids, scores, strict=True)
        ]
        tiers = self._tiers(work, candidates, paths)
        weights = weigh(candidates, options, work.today)
        language = language_weights(candidates, relevance, options.language_weight)
        weights = replace(weights, language=language)
        curated = weights.curated if weights.curated is not None else 1.0
        # As `final_score`: relevance × recency weight × importance × curated × language.
        final = relevance * weights.recency_weight * weights.importance * curated * language
        return CandidatePool(candidates, scores, relevance, keyword, tiers, weights, final)

    def _candidates(self, work: RankingWork, ids: list[int]) -> tuple[Candidates, PathWords | None]:
        """The candidates `ids` that are still stored, with what weighs them: from this
        generation's table when it is built, else read from the store (once a search); and
        the generation's path words (None until built), which tier them."""

        def read(store: Store, asked: list[int]) -> list[ChunkFacts]:
            missing = [chunk_id for chunk_id in asked if chunk_id not in work.facts]
            if missing:
                work.facts.update((f.id, f) for f in store.chunk_facts(missing))
            return [work.facts[chunk_id] for chunk_id in asked if chunk_id in work.facts]

        def find(store: Store) -> tuple[Candidates, PathWords | None]:
            tables = self._tables_of(store)
            if tables is None:
                read(store, ids)
                return read_candidates(ids, work.facts), None
            paths, chunks = tables
            return chunks.candidates(ids, lambda asked: read(store, asked)), paths

        nothing: tuple[Candidates, PathWords | None] = (read_candidates([], {}), None)
        return self._with_store(find, nothing)

    @staticmethod
    def _tiers(work: RankingWork, candidates: Candidates, table: PathWords | None) -> np.ndarray:
        """The path tier of each candidate (`path_tiers`, for those not tiered yet this
        search, all at once)."""
        tiers = work.tiers
        fresh = [p for p, chunk_id in enumerate(candidates.ids) if chunk_id not in tiers]
        if fresh:
            files = candidates.files[np.asarray(fresh, dtype=np.int64)]
            found = path_tiers(work.query.path, files, candidates.paths, table)
            tiers.update((candidates.ids[p], tier) for p, tier in zip(fresh, found, strict=True))
        count = len(candidates.ids)
        return np.fromiter((tiers[chunk_id] for chunk_id in candidates.ids), np.int64, count)

    def _chosen(self, work: RankingWork, pool: CandidatePool) -> list[ChosenCandidate]:
        """The candidates selected to be shown, with their records (read once a search). A
        chunk deleted since it was weighed gives its place to the next."""
        while True:
            positions = self._select(pool, work.options)
            ids = [pool.candidates.ids[p] for p in positions]
            records = self._records(work, ids)
            gone = {chunk_id for chunk_id in ids if chunk_id not in records}
            if not gone:
                return [pool.chosen(p, records[i]) for p, i in zip(positions, ids, strict=True)]
            pool = pool.without(gone)

    def _records(self, work: RankingWork, ids: list[int]) -> dict[int, ChunkRecord]:
        """The records (texts included) of the chunks shown, read once a search."""
        missing = [chunk_id for chunk_id in ids if chunk_id not in work.records]
        if missing:
            found: dict[int, ChunkRecord] = self._with_store(lambda s: s.chunks_by_id(missing), {})
            work.records.update(found)
        return work.records

    def _tables_of(self, store: Store) -> Tables | None:
        """This store generation's tables: every path's words and every chunk's facts.
        None for the generation's first search, which tiers and weighs its candidates one
        by one. The tables cost a pass over every path and chunk (0.1 s and more at 100k
        notes), which repays itself over many searches, not over the one a shell command
        makes."""

        def build(last: PathWords | None) -> Tables:
            with store.snapshot():
                # After an edit, the last path table is brought up to date: only the paths
                # that changed are read again.
                files = store.file_paths()
                paths = PathWords(files) if last is None else last.updated(files)
                return paths, ChunkTable.read(store, paths.paths)

        return self._generations.of(store.generation()).tables(build)

    @staticmethod
    def _select(pool: CandidatePool, options: ResolvedOptions) -> list[int]:
        """Positions of the candidates shown: path-tier matches first, then the rest through
        `minScore` (keyword matches kept), which judges relevance alone: recency and
        importance only order what passes."""
        limit = options.limit
        tiers = pool.tiers.tolist()
        order = pool.order()
        tiered = [p for p in order if tiers[p] > PathTier.NONE]
        rest = [p for p in order if tiers[p] == PathTier.NONE]
        relevance = pool.relevance.tolist()
        return tiered[:limit] + select_with_min_score(
            rest,
            score=relevance.__getitem__,
            is_keyword_match=pool.keyword.__getitem__,
            min_score=options.min_score,
            limit=max(0, limit - len(tiered)),
        )

    @staticmethod
    def _diversify(
        work: RankingWork, chosen: list[ChosenCandidate], lam: float
    ) -> list[ChosenCandidate]:
        """MMR over body relevance (each score multiplied by its novelty factor); path-tier
        hits stay on top."""
        head = [c for c in chosen if c.tier > PathTier.NONE]
        tail = mmr_order(
            [c for c in chosen if c.tier == PathTier.NONE],
            relevance=lambda c: c.final,
            tokens=lambda c: work.term_set_of(c.chunk),
            lam=lam,
        )
        placed = head + [d.item for d in tail]
        values = [c.final for c in head] + [d.item.final * d.factor for d in tail]
        # A note leads with its best passage: within the places its passages hold, they are
        # put in score order, and each takes the score of the place it takes.
        ordered = best_chunk_first(placed)
        for position, candidate in enumerate(ordered, start=1):
            candidate.mmr_position = position
        set_shown_scores(ordered, values)
        return ordered

    # -- store access -------------------------------------------------------------------

    def _with_store(self, action: Callable[[Store], T], default: T) -> T:
        """`action` on the read-only store, opened on first use; `default` before any index."""
        with self._store_lock:
            if self._store is None and Store.exists(self.index_dir):
                self._store = Store(self.index_dir, readonly=True)
            return default if self._store is None else action(self._store)

    def _named_chunk_ids(self, work: RankingWork) -> set[int]:
        """First chunks of the notes whose path, file name or stem is the query (looked up
        once a search, in the store's names table)."""
        if work.named is None:
            form = work.query.path.form
            files: list[int] = self._with_store(lambda s: s.files_named(form), [])
            if work.admitted is not None:
                admitted = work.admitted.files
                files = [file_id for file_id in files if file_id in admitted]
            firsts: dict[int, ChunkRecord] = {}
            if files:
                firsts = self._with_store(lambda s: s.first_chunk_of_files(files), {})
            work.named = {chunk.id for chunk in firsts.values()}
        return work.named


def _scorer_of(settings: Settings) -> RerankScorer:
    """The second stage's scorer as the settings name it (its model loaded on first use)."""
    from apus.search.rerank.scorer import make_scorer

    return make_scorer(settings.search.rerank)


def _title_and_headings(chunks: list[ChunkRecord]) -> str:
    """A note's title and every heading in it: what the note says it is about."""
    from apus.vault.markdown import heading

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
