"""What a search is asked for, and the same with every setting it reads made concrete."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from apus.config import QuerySettings, RerankSettings
from apus.index.note_filter import NoteFilter
from apus.search.hybrid import MergeMethod

Mode = Literal["hybrid", "keyword", "vector"]


@dataclass(frozen=True)
class SearchOptions:
    """What a face asks for; None leaves an option to `memory.search.query` in config."""

    mode: Mode = "hybrid"
    limit: int | None = None  # None: maxResults
    mmr: bool | None = None  # None: hybrid.mmr.enabled
    recency: bool | None = None  # None: hybrid.temporalDecay.enabled
    min_score: float | None = None  # None: minScore
    filters: NoteFilter = field(default_factory=NoteFilter)
    rerank: bool | None = None  # None: memory.search.rerank.enabled
    # The session's rules (`Memory.search`), which the Searcher never reads: at most this
    # many passages of one note, touching ones merged (None: no limit); and, without
    # since/until, a time in the query's words read as the dates to search.
    per_note: int | None = None
    time_words: bool = False

    def resolve(
        self, config: QuerySettings, rerank: RerankSettings | None = None
    ) -> ResolvedOptions:
        """These options with config's values where they leave one open, and every other
        setting a search reads: read here once, so that every step of one search agrees.
        `rerank`: the second stage's settings (None: no second stage)."""
        hybrid = config.hybrid
        decay = hybrid.temporal_decay
        reranks = rerank is not None and (rerank.enabled if self.rerank is None else self.rerank)
        return ResolvedOptions(
            mode=self.mode,
            limit=self.limit or config.max_results,
            mmr=hybrid.mmr.enabled if self.mmr is None else self.mmr,
            recency=decay.enabled if self.recency is None else self.recency,
            min_score=config.min_score if self.min_score is None else self.min_score,
            filters=self.filters,
            candidates=config.candidates,
            hybrid=hybrid.enabled,
            vector_weight=hybrid.vector_weight,
            text_weight=hybrid.text_weight,
            merge=hybrid.merge,
            rrf_k=hybrid.rrf_k,
            mmr_lambda=hybrid.mmr.lambda_,
            half_life_days=decay.half_life_days,
            recency_floor=decay.floor,
            rerank=rerank if reranks else None,
            curated_weight=config.curated_weight,
            language_weight=config.language_weight,
        )


@dataclass(frozen=True)
class ResolvedOptions:
    """One search's options and settings, none left open."""

    mode: Mode
    limit: int
    mmr: bool
    recency: bool
    min_score: float
    filters: NoteFilter
    candidates: int  # how many hits each leg asks for
    hybrid: bool  # whether the vector leg may run at all
    vector_weight: float | None  # None: `leg_weights` decides from the query
    text_weight: float | None
    merge: MergeMethod
    rrf_k: int
    mmr_lambda: float
    half_life_days: float
    recency_floor: float
    rerank: RerankSettings | None = None  # the second stage, when it runs
    curated_weight: float = 1.0  # what the agent's own memory is multiplied by
    language_weight: float = 1.0  # what a note in another language than the query's is
