"""The rerank stage: the model scores the top candidates within a deadline, and its scores
meet the fused ones (`blend`); past the deadline or on any failure the fused order stands
and the report says why."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from apus.config import RerankSettings
from apus.errors import ApusError
from apus.index.store import ChunkRecord
from apus.search.query import ParsedQuery
from apus.search.rerank.passage import passage_text
from apus.search.rerank.scorer import RerankScorer

_DEADLINE_FIX = (
    "raise memory.search.rerank.deadlineMs, or lower memory.search.rerank.candidates or "
    "passageTokens"
)
# With fused scores all alike there is no spread to measure the model's in: it only breaks
# their ties.
_TIE_SPREAD = 1e-3


@dataclass(frozen=True)
class RerankReport:
    """What the stage did: ran, or why not and what fixes it; passages read; time taken."""

    ran: bool
    reason: str = ""
    fix: str = ""
    candidates: int = 0
    ms: float = 0.0


@dataclass(frozen=True)
class RerankOutcome:
    report: RerankReport
    scores: list[float] | None = None  # the model's, one a candidate (None: it did not run)
    relevance: np.ndarray | None = None  # the blended relevance of each candidate


@dataclass
class Reranker:
    """The stage as a search runs it: a scorer made on first use (`source`: a search
    without the stage never loads a model) and the clock the deadline is read from."""

    source: Callable[[], RerankScorer]
    clock: Callable[[], float] = time.monotonic
    _scorer: RerankScorer | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def scorer(self) -> RerankScorer:
        """The scorer, made now if it is not yet (a RerankError says why it cannot be; the
        next search tries again, so a model pulled meanwhile is found)."""
        with self._lock:
            if self._scorer is None:
                self._scorer = self.source()
            return self._scorer

    def run(
        self,
        query: ParsedQuery,
        chunks: Sequence[ChunkRecord],
        relevance: np.ndarray,
        settings: RerankSettings,
    ) -> RerankOutcome:
        """Score the passages of `chunks` (best fused first, `relevance` their fused
        scores) within `settings.deadline_ms`, and blend; any failure leaves the fused
        order."""
        terms = frozenset(query.terms)
        passages = [passage_text(chunk, terms, settings.passage_tokens) for chunk in chunks]
        return self.score(query.text, passages, relevance, settings)

    def score(
        self, query: str, passages: Sequence[str], relevance: np.ndarray, settings: RerankSettings
    ) -> RerankOutcome:
        """`run` for passages already made."""
        started = self.clock()
        try:
            scorer = self.scorer()
            # The deadline bounds the scoring: a model is loaded once, by the first search.
            deadline = self.clock() + settings.deadline_ms / 1000
            scores: dict[int, float] = {}
            step = max(1, scorer.batch_size)
            # Shortest first: a run is padded to its longest passage, so like goes with like.
            order = sorted(range(len(passages)), key=lambda i: len(passages[i]))
            for first in range(0, len(order), step):
                left = deadline - self.clock()
                if left <= 0:
                    reason = (
                        f"it passed its deadline of {settings.deadline_ms} ms after "
                        f"{len(scores)} of {len(passages)} passages"
                    )
                    return self._failed(reason, _DEADLINE_FIX, started)
                run = order[first : first + step]
                batch = [passages[i] for i in run]
                found = scorer.score(
                    query, batch, timeout=left, passage_tokens=settings.passage_tokens
                )
                if len(found) != len(batch):
                    reason = f"{scorer.label} gave {len(found)} scores for {len(batch)} passages"
                    return self._failed(reason, "", started)
                scores.update(zip(run, found, strict=True))
        except ApusError as exc:
            return self._failed(exc.reason, exc.fix, started)
        except Exception as exc:  # a model or library fault must not cost the answer
            return self._failed(f"the reranker failed: {type(exc).__name__}: {exc}", "", started)
        ms = (self.clock() - started) * 1000
        ordered = [scores[i] for i in range(len(passages))]
        blended = blend(relevance, np.asarray(ordered, dtype=np.float64), settings.weight)
        report = RerankReport(True, candidates=len(passages), ms=ms)
        return RerankOutcome(report, ordered, blended)

    def _failed(self, reason: str, fix: str, started: float) -> RerankOutcome:
        ms = (self.clock() - started) * 1000
        return RerankOutcome(RerankReport(False, reason, fix, ms=ms))

    def close(self) -> None:
        with self._lock:
            if self._scorer is not None:
                self._scorer.close()
                self._scorer = None


def blend(relevance: np.ndarray, scores: np.ndarray, weight: float) -> np.ndarray:
    """The fused relevance moved by the model's scores: `relevance + weight·σ·z`, with `z`
    the model's score in standard deviations of these candidates' and `σ` the spread of
    their fused relevance. The z-scores of both added, told in the fused scale: neither
    scale means anything across queries, their spreads within one do. Never below 0."""
    if len(scores) == 0:
        return relevance.copy()
    spread = float(np.std(scores))
    z = (scores - float(np.mean(scores))) / spread if spread > 0 else np.zeros_like(scores)
    scale = max(float(np.std(relevance)), _TIE_SPREAD)
    blended: np.ndarray = np.maximum(relevance + weight * scale * z, 0.0)
    return blended
