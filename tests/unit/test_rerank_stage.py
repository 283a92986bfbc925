"""The rerank stage on its own: how the model's scores meet the fused ones, and the deadline,
counted in the scorer's calls against a clock the test moves (never the machine's)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

from apus.config import RerankSettings
from apus.search.rerank.scorer import RerankError
from apus.search.rerank.stage import Reranker, blend


@dataclass
class CountingScorer:
    """Scores each passage by its length; every call moves the test's clock a second on."""

    batch_size: int = 2
    label: str = "counting scorer"
    seconds_a_call: float = 1.0
    calls: list[list[str]] = field(default_factory=list)
    now: float = 0.0
    fail: Exception | None = None

    def clock(self) -> float:
        return self.now

    def score(
        self, query: str, passages: Sequence[str], *, timeout: float, passage_tokens: int
    ) -> list[float]:
        self.calls.append(list(passages))
        self.now += self.seconds_a_call
        if self.fail is not None:
            raise self.fail
        return [float(len(passage)) for passage in passages]

    def close(self) -> None:
        return None


def _stage(scorer: CountingScorer) -> Reranker:
    return Reranker(lambda: scorer, clock=scorer.clock)


PASSAGES = ["a", "bbbbbbbbbb", "cc", "ddd", "eeeeeeee", "f"]
FUSED = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])


def test_within_the_deadline_every_passage_is_scored_and_blended() -> None:
    scorer = CountingScorer()
    outcome = _stage(scorer).score("q", PASSAGES, FUSED, RerankSettings(deadline_ms=10_000))
    assert outcome.report.ran and outcome.report.candidates == 6
    assert [len(call) for call in scorer.calls] == [2, 2, 2]
    assert outcome.scores == [1.0, 10.0, 2.0, 3.0, 8.0, 1.0]
    assert outcome.relevance is not None
    # The model's favourite (the longest passage) now leads; the fused order is gone.
    assert int(np.argmax(outcome.relevance)) == 1


def test_past_the_deadline_the_stage_stops_between_calls_and_keeps_nothing() -> None:
    scorer = CountingScorer(batch_size=1)  # one second a call, a deadline of 2.5 s
    outcome = _stage(scorer).score("q", PASSAGES, FUSED, RerankSettings(deadline_ms=2500))
    assert len(scorer.calls) == 3  # the third call ends at 3 s: no fourth is started
    assert not outcome.report.ran
    assert outcome.relevance is None and outcome.scores is None
    assert outcome.report.reason == "it passed its deadline of 2500 ms after 3 of 6 passages"
    assert "memory.search.rerank.deadlineMs" in outcome.report.fix


def test_a_call_started_before_the_deadline_keeps_its_scores() -> None:
    scorer = CountingScorer(batch_size=2)  # the last call starts at 2 s, within 2.001 s
    outcome = _stage(scorer).score("q", PASSAGES, FUSED, RerankSettings(deadline_ms=2001))
    assert len(scorer.calls) == 3 and outcome.report.ran
    assert outcome.report.ms == 3000.0  # the stage's time, read from the same clock


@pytest.mark.parametrize(
    ("error", "reason", "fix"),
    [
        (RerankError("the model is gone", fix="apus models pull x"), "the model is gone", "pull"),
        (RuntimeError("onnx fault"), "the reranker failed: RuntimeError: onnx fault", ""),
    ],
)
def test_a_failing_scorer_leaves_the_fused_order_and_says_why(
    error: Exception, reason: str, fix: str
) -> None:
    scorer = CountingScorer(fail=error)
    outcome = _stage(scorer).score("q", PASSAGES, FUSED, RerankSettings())
    assert not outcome.report.ran and outcome.relevance is None
    assert outcome.report.reason == reason
    assert fix in outcome.report.fix


def test_a_scorer_that_cannot_be_made_is_tried_again_by_the_next_search() -> None:
    made: list[int] = []

    def source() -> CountingScorer:
        made.append(1)
        if len(made) == 1:
            raise RerankError("not downloaded yet", fix="apus models pull x")
        return CountingScorer()

    stage = Reranker(source)
    first = stage.score("q", PASSAGES, FUSED, RerankSettings())
    second = stage.score("q", PASSAGES, FUSED, RerankSettings())
    assert (first.report.ran, first.report.fix) == (False, "apus models pull x")
    assert second.report.ran and len(made) == 2


def test_blend_adds_both_z_scores_in_the_fused_scale() -> None:
    relevance = np.array([0.9, 0.7, 0.5])
    scores = np.array([-3.0, 0.0, 3.0])
    weight0 = blend(relevance, scores, 0.0)
    assert weight0.tolist() == relevance.tolist()  # weight 0: the fused scores as they were
    moved = blend(relevance, scores, 1.0)
    z = (scores - scores.mean()) / scores.std()
    assert np.allclose(moved, np.maximum(relevance + relevance.std() * z, 0.0))
    assert moved.argmax() == 2  # the model's strong favourite overtakes


def test_blend_never_goes_below_zero_and_breaks_ties_of_equal_fused_scores() -> None:
    moved = blend(np.array([0.1, 0.1, 0.1]), np.array([5.0, -5.0, 0.0]), 100.0)
    assert (moved >= 0).all()
    assert moved[0] > moved[2] >= moved[1]
    assert blend(np.array([0.4, 0.3]), np.array([2.0, 2.0]), 1.0).tolist() == [0.4, 0.3]
