"""The candidates of one ranking: weighed position by position in arrays (`CandidatePool`),
those chosen to be shown (`ChosenCandidate`), the order and scores they are shown with, and
the hit each becomes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from apus.index.store import ChunkRecord
from apus.search.chunk_table import Candidates, Weights
from apus.search.hybrid import MergedScore
from apus.search.ranking import PathTier, RankFactors, rank_key, readable_score
from apus.search.results import Explanation, SearchHit
from apus.search.snippet import Snippet


@dataclass
class ChosenCandidate:
    """A candidate chosen to be shown, with its record."""

    chunk: ChunkRecord
    score: MergedScore[int] | None
    factors: RankFactors
    final: float
    mmr_position: int | None = None
    # The score it is shown with, the one the list is ordered by (`set_shown_scores`).
    shown: float = 0.0

    @property
    def tier(self) -> PathTier:
        return self.factors.tier

    @property
    def diversity(self) -> float:
        """What `final` was multiplied by to give the score shown."""
        return self.shown / self.final if self.final > 0 and self.shown <= self.final else 1.0


@dataclass(frozen=True)
class CandidatePool:
    """Every candidate of one ranking, position by position: arrays, so that hundreds of
    candidates are weighed and ordered without an object each (only those shown get one)."""

    candidates: Candidates
    scores: list[MergedScore[int] | None]
    relevance: np.ndarray  # the merged score, before recency and importance
    keyword: list[bool]  # found by its words (or the query names its note)
    tiers: np.ndarray  # PathTier values
    weights: Weights
    final: np.ndarray

    def order(self) -> list[int]:
        """Positions best first: higher path tier, then higher final score, then the legs'
        order (`rank_key`; lexsort is stable)."""
        order: list[int] = np.lexsort((-self.final, -self.tiers)).tolist()
        return order

    def without(self, gone: set[int]) -> CandidatePool:
        """The pool without the candidates (chunk ids) deleted since they were weighed."""
        keep = [i for i, chunk_id in enumerate(self.candidates.ids) if chunk_id not in gone]
        at = np.asarray(keep, dtype=np.int64)
        return CandidatePool(
            self.candidates.only(keep),
            [self.scores[i] for i in keep],
            self.relevance[at],
            [self.keyword[i] for i in keep],
            self.tiers[at],
            self.weights.only(at),
            self.final[at],
        )

    def chosen(self, position: int, record: ChunkRecord) -> ChosenCandidate:
        """The candidate at `position`, chosen to be shown, with its record and factors."""
        weights = self.weights
        factors = RankFactors(
            recency=float(weights.recency[position]),
            importance=float(weights.importance[position]),
            tier=PathTier(int(self.tiers[position])),
            recency_weight=float(weights.recency_weight[position]),
            language=1.0 if weights.language is None else float(weights.language[position]),
            curated=1.0 if weights.curated is None else float(weights.curated[position]),
        )
        return ChosenCandidate(record, self.scores[position], factors, float(self.final[position]))


def hit_of(
    c: ChosenCandidate,
    snippet: Snippet,
    vector_hits: dict[int, float] | None,
    reranked: tuple[float, float] | None = None,
) -> SearchHit:
    """The hit a chosen candidate is shown as: the legs that found it (`vector_hits`: the
    vector leg's, None when it did not run) and every factor of its score (`reranked`: the
    reranker's score and the blended relevance, when the second stage read it)."""
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
        score=readable_score(c.shown),
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
            recency=c.factors.recency,
            recency_weight=c.factors.recency_weight,
            importance=c.factors.importance,
            tier=c.tier.name.lower(),
            mmr_position=c.mmr_position,
            rerank=None if reranked is None else reranked[0],
            reranked=None if reranked is None else reranked[1],
            final=c.final,
            diversity=c.diversity,
            language=c.factors.language,
            curated=c.factors.curated,
        ),
    )


def set_shown_scores(ordered: list[ChosenCandidate], values: list[float]) -> None:
    """Give each candidate the score it is shown with: `values[i]` for the i-th place
    (final × MMR's factor, which never rises down the list), except that the notes the
    query names, placed first whatever they score, show the answer's best score (their own
    match stays in the relevance)."""
    best = max(values, default=0.0)
    for candidate, value in zip(ordered, values, strict=True):
        candidate.shown = best if candidate.tier > PathTier.NONE else value


def best_chunk_first(ordered: list[ChosenCandidate]) -> list[ChosenCandidate]:
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
