"""The Searcher: runs the keyword and vector legs, knows the index state, returns ranked hits."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

from apus.config import Settings
from apus.errors import IndexBusyError
from apus.index.keyword import KeywordIndex, KeywordState
from apus.index.lock import WriterLock
from apus.index.store import ChunkRecord, Store
from apus.search.hybrid import merge_legs
from apus.search.mmr import mmr_order
from apus.search.ranking import (
    PathTier,
    PathTierer,
    RankFactors,
    final_score,
    importance_factor,
    rank_key,
    recency_factor,
    select_with_min_score,
)
from apus.search.snippet import make_snippet
from apus.vault.text import fold, query_terms, snippet_tokens

Mode = Literal["hybrid", "keyword", "vector"]


@dataclass(frozen=True)
class SearchOptions:
    mode: Mode = "hybrid"
    limit: int | None = None  # None: memory.search.query.maxResults
    mmr: bool | None = None  # None: from config
    recency: bool | None = None
    min_score: float | None = None


@dataclass(frozen=True)
class LegReport:
    ran: bool
    reason: str = ""  # why it did not run, or a caveat ("stale index being rebuilt")
    candidates: int = 0
    ms: float = 0.0


@dataclass(frozen=True)
class Explanation:
    vector_raw: float | None
    vector_norm: float
    text_raw: float | None
    text_norm: float
    merged: float
    recency: float
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


@dataclass(frozen=True)
class SearchResponse:
    query: str
    mode: Mode
    hits: list[SearchHit]
    legs: dict[str, LegReport] = field(default_factory=dict)
    ms: float = 0.0


class VectorLeg:
    """What the engine needs from the vector side (wired up in apus.core)."""

    strict = False  # True: failures are raised to the caller instead of degrading

    def status(self) -> tuple[bool, str]:  # (usable now, reason when not)
        raise NotImplementedError

    def search(self, query: str, k: int) -> dict[int, float]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the leg holds (an embedder it owns)."""


@dataclass
class _Candidate:
    chunk: ChunkRecord
    vector_raw: float | None
    vector_norm: float
    text_raw: float | None
    text_norm: float
    merged: float
    recency: float
    importance: float
    tier: PathTier
    final: float
    keyword_match: bool
    mmr_position: int | None = None


class Searcher:
    """Answers queries against one vault's index. Thread-safe; cheap to call repeatedly."""

    def __init__(
        self,
        settings: Settings,
        *,
        vector_leg: VectorLeg | None = None,
        today: Callable[[], dt.date] = dt.date.today,
    ) -> None:
        self.settings = settings
        self.vault = settings.vault_path()
        self.index_dir = settings.index_dir()
        self.vector_leg = vector_leg
        self._today = today
        self._keyword = KeywordIndex(self.index_dir)
        self._store: Store | None = None
        self._store_lock = threading.Lock()
        self._keyword_verified: tuple[int, int | None] | None = None
        self._names: tuple[int, dict[str, list[int]]] | None = None
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

    # -- store access -------------------------------------------------------------------

    def _open_store(self) -> Store | None:
        if self._store is None and Store.exists(self.index_dir):
            self._store = Store(self.index_dir, readonly=True)
        return self._store

    def _with_store(self, action: Callable[[Store], object], default: object) -> object:
        with self._store_lock:
            store = self._open_store()
            return default if store is None else action(store)

    def _files_named(self, store: Store, query: str) -> list[int]:
        """Ids of files whose path, file name or stem is the query (folded), via a lookup
        table rebuilt only when the store changes."""
        generation = store.generation()
        if self._names is None or self._names[0] != generation:
            table: dict[str, list[int]] = {}
            for path, record in store.files().items():
                folded = fold(path)
                base = folded.rsplit("/", 1)[-1]
                for key in {folded, base, base.rsplit(".", 1)[0]}:
                    table.setdefault(key, []).append(record.id)
            self._names = (generation, table)
        key = fold(query).strip().replace("\\", "/")
        while key.startswith("./"):
            key = key[2:]
        return self._names[1].get(key, [])

    # -- the keyword leg ----------------------------------------------------------------

    def _keyword_ready(self, *, damaged: bool = False) -> tuple[bool, str, int]:
        """Make sure the keyword index reflects the store; rebuild it if it cannot.

        `damaged`: a search just failed on it, so rebuild even though it opens.
        """
        generation = self._with_store(lambda s: s.generation(), None)
        if generation is None:
            return False, "the vault has not been indexed yet (run `apus memory index`)", 0
        signature = (generation, self._keyword.stamp_signature())
        if not damaged and signature == self._keyword_verified:
            # Opening the index to check it costs more than a search: once per change is enough.
            return True, "", int(generation)  # type: ignore[arg-type]
        state = self._keyword.state()
        if damaged:
            state = KeywordState(False, None, "keyword index damaged")
        if state.usable and state.generation == generation:
            self._keyword_verified = signature
            return True, "", int(generation)  # type: ignore[arg-type]
        try:
            with WriterLock(self.index_dir, self.vault):
                writer_store = Store(self.index_dir)
                try:
                    self._keyword.rebuild(writer_store)
                    generation = writer_store.generation()
                finally:
                    writer_store.close()
            return True, "", int(generation)  # type: ignore[arg-type]
        except IndexBusyError:
            if state.usable:
                # The writer holding the lock brings it up to date; serve the last commit.
                return True, "index update in progress", int(state.generation or 0)
            return False, "keyword index is being rebuilt", 0

    def _keyword_leg(self, terms: list[str], k: int) -> tuple[dict[int, float], LegReport]:
        started = time.perf_counter()
        ready, reason, generation = self._keyword_ready()
        if not ready:
            return {}, LegReport(False, reason)
        try:
            hits = dict(self._keyword.search(terms, k, generation))
        except Exception:  # damage that opening the index did not show (Whoosh raises many types)
            ready, reason, generation = self._keyword_ready(damaged=True)
            if not ready:
                return {}, LegReport(False, reason)
            hits = dict(self._keyword.search(terms, k, generation))
        ms = (time.perf_counter() - started) * 1000
        return hits, LegReport(True, reason, len(hits), ms)

    def _vector_leg(self, query: str, k: int) -> tuple[dict[int, float] | None, LegReport]:
        if self.vector_leg is None:
            return None, LegReport(False, "embeddings are off (provider = none)")
        started = time.perf_counter()
        try:
            usable, reason = self.vector_leg.status()
            if not usable:
                return None, LegReport(False, reason)
            hits = self.vector_leg.search(query, k)
        except Exception as exc:
            # A leg that may degrade does so (keyword search still answers); an explicitly
            # configured remote provider must not degrade silently.
            if self.vector_leg.strict:
                raise
            return None, LegReport(False, str(exc))
        return hits, LegReport(True, "", len(hits), (time.perf_counter() - started) * 1000)

    # -- searching ----------------------------------------------------------------------

    def search(self, query: str, options: SearchOptions | None = None) -> SearchResponse:
        options = options or SearchOptions()
        started = time.perf_counter()
        settings = self.settings.search.query
        limit = options.limit or settings.max_results
        query = query.strip()
        terms = query_terms(query)
        if not query:
            return SearchResponse(query, options.mode, [])
        k = settings.candidates
        legs: dict[str, LegReport] = {}
        text_hits: dict[int, float] | None = None
        vector_hits: dict[int, float] | None = None
        vector_future: Future[tuple[dict[int, float] | None, LegReport]] | None = None
        if options.mode in ("hybrid", "vector") and settings.hybrid.enabled:
            vector_future = self._pool.submit(self._vector_leg, query, k)
        elif options.mode in ("hybrid", "vector"):
            legs["vector"] = LegReport(False, "hybrid search is disabled in config")
        if options.mode in ("hybrid", "keyword"):
            text_hits, legs["keyword"] = self._keyword_leg(terms, k)
        else:
            legs["keyword"] = LegReport(False, "not requested (--mode vector)")
        if vector_future is not None:
            vector_hits, legs["vector"] = vector_future.result()
        elif "vector" not in legs:
            legs["vector"] = LegReport(False, "not requested (--mode keyword)")

        path_files = self._with_store(lambda s: self._files_named(s, query), [])
        hits = self._rank(
            query,
            terms,
            vector_hits,
            text_hits or {},
            path_files,
            options,
            limit,  # type: ignore[arg-type]
            keyword_ran=legs["keyword"].ran,
        )
        return SearchResponse(
            query, options.mode, hits, legs, (time.perf_counter() - started) * 1000
        )

    def _rank(
        self,
        query: str,
        terms: list[str],
        vector_hits: dict[int, float] | None,
        text_hits: dict[int, float],
        path_files: list[int],
        options: SearchOptions,
        limit: int,
        *,
        keyword_ran: bool,
    ) -> list[SearchHit]:
        config = self.settings.search.query
        hybrid = config.hybrid
        merged = merge_legs(
            vector_hits,
            text_hits if keyword_ran else None,
            hybrid.vector_weight,
            hybrid.text_weight,
        )
        ids = list(merged)
        path_chunk_ids: set[int] = set()
        if path_files:
            firsts = self._with_store(lambda s: s.first_chunk_of_files(path_files), {})
            path_chunk_ids = {c.id for c in firsts.values()}  # type: ignore[union-attr]
            ids.extend(i for i in path_chunk_ids if i not in merged)
        chunks: dict[int, ChunkRecord] = self._with_store(  # type: ignore[assignment]
            lambda s: s.chunks_by_id(ids), {}
        )
        today = self._today()
        use_recency = hybrid.temporal_decay.enabled if options.recency is None else options.recency
        query_tokens = frozenset(terms)
        tier_of = PathTierer(query)
        candidates: list[_Candidate] = []
        for chunk_id in ids:
            chunk = chunks.get(chunk_id)
            if chunk is None:  # deleted since the leg ran
                continue
            score = merged.get(chunk_id)
            note_date = dt.date.fromisoformat(chunk.note_date) if chunk.note_date else None
            factors = RankFactors(
                recency=recency_factor(
                    note_date, today, hybrid.temporal_decay.half_life_days, use_recency
                ),
                importance=importance_factor(chunk.importance),
                tier=tier_of(chunk.path),
            )
            base = score.merged if score else 0.0
            candidates.append(
                _Candidate(
                    chunk=chunk,
                    vector_raw=score.vector_raw if score else None,
                    vector_norm=score.vector_norm if score else 0.0,
                    text_raw=score.text_raw if score else None,
                    text_norm=score.text_norm if score else 0.0,
                    merged=base,
                    recency=factors.recency,
                    importance=factors.importance,
                    tier=factors.tier,
                    final=final_score(base, factors),
                    keyword_match=(score is not None and score.text_raw is not None)
                    or chunk_id in path_chunk_ids,
                )
            )
        candidates.sort(key=lambda c: rank_key(c.final, c.tier))
        min_score = config.min_score if options.min_score is None else options.min_score
        tiered = [c for c in candidates if c.tier > PathTier.NONE]
        rest = [c for c in candidates if c.tier == PathTier.NONE]
        chosen = tiered[:limit] + select_with_min_score(
            rest,
            score=lambda c: c.final,
            is_keyword_match=lambda c: c.keyword_match,
            min_score=min_score,
            limit=max(0, limit - len(tiered)),
        )
        use_mmr = hybrid.mmr.enabled if options.mmr is None else options.mmr
        if use_mmr and len(chosen) > 1:
            # Path-tier hits stay on top: MMR only diversifies body relevance.
            head = [c for c in chosen if c.tier > PathTier.NONE]
            tail = mmr_order(
                [c for c in chosen if c.tier == PathTier.NONE],
                relevance=lambda c: c.final,
                tokens=lambda c: snippet_tokens(c.chunk.text),
                lam=hybrid.mmr.lambda_,
            )
            chosen = _best_chunk_first(head + tail)
            for position, candidate in enumerate(chosen, start=1):
                candidate.mmr_position = position
        return [self._hit(c, query_tokens, vector_hits) for c in chosen]

    @staticmethod
    def _hit(
        c: _Candidate, query_tokens: frozenset[str], vector_hits: dict[int, float] | None
    ) -> SearchHit:
        snippet = make_snippet(c.chunk.text, query_tokens)
        legs = []
        if c.text_raw is not None:
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
            score=round(c.final, 6),
            snippet=snippet.text,
            highlights=snippet.highlights,
            note_date=c.chunk.note_date,
            legs=tuple(legs),
            explain=Explanation(
                vector_raw=c.vector_raw,
                vector_norm=c.vector_norm,
                text_raw=c.text_raw,
                text_norm=c.text_norm,
                merged=c.merged,
                recency=c.recency,
                importance=c.importance,
                tier=c.tier.name.lower(),
                mmr_position=c.mmr_position,
            ),
        )


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
