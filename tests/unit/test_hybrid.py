"""Score normalisation and the weighted merge of the two retrieval legs."""

from __future__ import annotations

import math

import pytest

from apus.search.hybrid import (
    MergedScore,
    MergeMethod,
    is_identifier_lookup,
    leg_weights,
    merge_legs,
    normalise_ranks,
    normalise_spreads,
    normalise_text_scores,
    normalise_vector_scores,
    normalise_weights,
)


@pytest.mark.parametrize(
    ("vector_weight", "text_weight", "expected"),
    [
        (0.7, 0.3, (0.7, 0.3)),
        (1.0, 1.0, (0.5, 0.5)),
        (0.2, 0.2, (0.5, 0.5)),
        (2.0, 0.5, (2 / 3, 1 / 3)),  # 2.0 clamps to 1.0 before rescaling
        (-1.0, 0.4, (0.0, 1.0)),
        (0.6, -5.0, (1.0, 0.0)),
        (0.0, 0.0, (0.5, 0.5)),  # nothing to rescale: equal weights
        (-3.0, -1.0, (0.5, 0.5)),
        (math.nan, 0.5, (0.0, 1.0)),
    ],
)
def test_normalise_weights(
    vector_weight: float, text_weight: float, expected: tuple[float, float]
) -> None:
    assert normalise_weights(vector_weight, text_weight) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("vector_weight", "text_weight", "expected"),
    [
        (None, None, (0.5, 0.5)),  # unset: equal, whatever the model
        (0.7, None, (0.7, 0.3)),  # one weight set: the other is the rest
        (None, 0.2, (0.8, 0.2)),
        (0.6, 0.6, (0.5, 0.5)),  # both set: rescaled as always
        (1.5, None, (1.0, 0.0)),
    ],
)
def test_leg_weights_come_from_the_settings_else_equal(
    vector_weight: float | None,
    text_weight: float | None,
    expected: tuple[float, float],
) -> None:
    assert leg_weights(vector_weight, text_weight) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("query", "lookup"),
    [
        ("JIRA-4821", True),
        ("gateway-host", True),
        ("k3s", True),
        ("ssh `gateway-host`", True),
        ("4821", True),
        ("notes/2026-11-20.md", True),
        ("router", False),
        ("home router", False),
        ("where is JIRA-4821 tracked", False),  # a question, not a lookup
        ("", False),
    ],
)
def test_identifier_lookups(query: str, lookup: bool) -> None:
    assert is_identifier_lookup(query) is lookup


def test_an_identifier_lookup_leans_on_exact_words_unless_weights_are_set() -> None:
    assert leg_weights(None, None, is_identifier_lookup("JIRA-4821")) == pytest.approx((0.3, 0.7))
    assert leg_weights(None, None, is_identifier_lookup("jira ticket")) == pytest.approx((0.5, 0.5))
    assert leg_weights(0.8, None, is_identifier_lookup("JIRA-4821")) == pytest.approx((0.8, 0.2))


def test_vector_scores_are_rescaled_over_the_candidates() -> None:
    # Cosines 0.3..0.6 (clamped first): the weakest becomes 0, the best 1, the middle 0.5.
    scores = normalise_vector_scores({"a": 0.6, "b": 0.45, "c": 0.3, "d": -0.2})
    assert scores == pytest.approx({"a": 1.0, "b": 0.75, "c": 0.5, "d": 0.0})
    # One candidate, or all equal: nothing to rescale by, the clamped cosine stays.
    assert normalise_vector_scores({"a": 0.42}) == pytest.approx({"a": 0.42})
    assert normalise_vector_scores({"a": 1.3, "b": 1.2}) == pytest.approx({"a": 1.0, "b": 1.0})
    assert normalise_vector_scores({}) == {}


def test_text_scores_are_divided_by_the_best() -> None:
    scores = normalise_text_scores({"a": 10.0, "b": 5.0, "c": 2.5})
    assert scores == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.25})


def test_text_normalisation_keeps_ratios_unlike_min_max() -> None:
    # Min-max would give "close" 0.0 although it matched 90% as well as the best.
    scores = normalise_text_scores({"best": 10.0, "close": 9.0})
    assert scores == pytest.approx({"best": 1.0, "close": 0.9})


@pytest.mark.parametrize(
    "raw", [{}, {"a": 0.0, "b": 0.0}, {"a": -1.0, "b": -2.0}], ids=["empty", "zero", "negative"]
)
def test_text_scores_without_a_positive_best_are_zero(raw: dict[str, float]) -> None:
    assert normalise_text_scores(raw) == dict.fromkeys(raw, 0.0)


def test_merge_uses_union_and_scores_missing_leg_as_zero() -> None:
    merged = merge_legs({"a": 0.8, "b": 0.4, "d": 0.2}, {"b": 6.0, "c": 3.0}, 0.7, 0.3)

    assert set(merged) == {"a", "b", "c", "d"}
    # vector rescaled over 0.2..0.8: a 1.0, b 1/3, d 0
    assert merged["a"] == MergedScore(
        key="a", vector_raw=0.8, vector_norm=1.0, text_raw=None, text_norm=0.0, merged=0.7
    )
    # b: 0.7·(1/3) + 0.3·(6/6) ≈ 0.5333
    assert merged["b"].merged == pytest.approx(0.7 / 3 + 0.3)
    assert merged["b"].text_raw == 6.0
    assert merged["b"].text_norm == pytest.approx(1.0)
    # c: keyword only, half the best BM25 score: 0.3·0.5
    assert merged["c"].vector_raw is None
    assert merged["c"].vector_norm == 0.0
    assert merged["c"].merged == pytest.approx(0.15)


def test_merge_rescales_weights() -> None:
    # 2.0 and 2.0 clamp to 1.0 each, then rescale to 0.5 / 0.5.
    merged = merge_legs({"b": 0.4}, {"b": 6.0, "c": 3.0}, 2.0, 2.0)
    assert merged["b"].merged == pytest.approx(0.5 * 0.4 + 0.5 * 1.0)
    assert merged["c"].merged == pytest.approx(0.5 * 0.5)


def test_merge_keyword_only_when_vector_leg_did_not_run() -> None:
    merged = merge_legs(None, {"b": 6.0, "c": 3.0}, 0.7, 0.3)
    # Not capped at the 0.3 text weight: the keyword leg counts alone.
    assert merged["b"].merged == pytest.approx(1.0)
    assert merged["c"].merged == pytest.approx(0.5)
    assert merged["b"].vector_raw is None
    assert merged["b"].vector_norm == 0.0


def test_merge_vector_only_when_keyword_leg_did_not_run() -> None:
    merged = merge_legs({"a": 0.8, "b": -0.1}, None, 0.7, 0.3)
    assert merged["a"].merged == pytest.approx(1.0)
    assert merged["b"].merged == 0.0
    assert merged["a"].text_raw is None


def test_merge_leg_that_ran_empty_still_weighs() -> None:
    # A leg that ran and found nothing scores 0 for every key; it does not lift the other leg.
    assert merge_legs({}, {"c": 3.0}, 0.7, 0.3)["c"].merged == pytest.approx(0.3)
    assert merge_legs({"a": 0.6}, {}, 0.7, 0.3)["a"].merged == pytest.approx(0.42)


def test_merge_with_no_candidates() -> None:
    assert merge_legs(None, None, 0.7, 0.3) == {}
    assert merge_legs({}, {}, 0.7, 0.3) == {}


def test_ranks_score_the_best_one_and_then_less() -> None:
    scores = normalise_ranks({"c": 2.0, "a": 9.0, "b": 5.0}, k=60)
    assert scores == pytest.approx({"a": 1.0, "b": 61 / 62, "c": 61 / 63})
    # Ties share the better rank; NaN ranks last; nothing in, nothing out.
    tied = normalise_ranks({"a": 3.0, "b": 3.0, "c": math.nan, "d": 1.0}, k=1)
    assert tied == pytest.approx({"a": 1.0, "b": 1.0, "c": 2 / 5, "d": 2 / 4})
    assert normalise_ranks({}) == {}


def test_rrf_merge_uses_ranks_not_scores() -> None:
    # The keyword leg's second hit is far below its first in BM25, but its rank is what counts.
    vector = {"a": 0.61, "b": 0.60, "c": 0.20}
    text = {"b": 40.0, "c": 1.0}
    merged = merge_legs(vector, text, 0.5, 0.5, method="rrf", rrf_k=60)
    assert merged["a"].merged == pytest.approx(0.5 * 1.0)
    assert merged["b"].merged == pytest.approx(0.5 * 61 / 62 + 0.5 * 1.0)
    assert merged["c"].merged == pytest.approx(0.5 * 61 / 63 + 0.5 * 61 / 62)
    assert merged["c"].text_norm == pytest.approx(61 / 62)
    assert merged["c"].text_raw == 1.0
    # The weighted merge ranks the same candidates by their scores: `a` over `c`.
    weighted = merge_legs(vector, text, 0.5, 0.5, method="weighted")
    assert weighted["a"].merged > weighted["c"].merged
    assert merged["c"].merged > merged["a"].merged


def test_rrf_merge_leaves_a_lone_leg_its_scores() -> None:
    # Nothing to fuse: keyword-only search keeps BM25 ratios (recency weighs against them).
    alone = merge_legs(None, {"b": 6.0, "c": 3.0}, 0.7, 0.3, method="rrf")
    assert alone["c"].merged == pytest.approx(0.5)
    vector_alone = merge_legs({"a": 0.8, "b": 0.4, "c": 0.2}, None, 0.7, 0.3, method="rrf")
    assert vector_alone["b"].merged == pytest.approx(1 / 3)


def test_spreads_are_standard_deviations_above_the_floor_on_one_shared_scale() -> None:
    # vector: mean 2, sd sqrt(2/3) -> a 2/sd = 2.449, b 1/sd = 1.225, c 0
    # text: mean 5, sd 5 -> b 2, d 0; both divided by the larger best, 2.449
    v, t = normalise_spreads({"a": 3.0, "b": 2.0, "c": 1.0}, {"b": 10.0, "d": 0.0})
    assert v == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.0})
    assert t == pytest.approx({"b": 2 / math.sqrt(6), "d": 0.0})
    # No spread to measure (one candidate, or all equal): one unit above the floor.
    assert normalise_spreads({"a": 0.4}, {"b": 2.0, "c": 2.0}) == ({"a": 1.0}, {"b": 1.0, "c": 1.0})
    assert normalise_spreads({}, {}) == ({}, {})
    assert normalise_spreads({"a": math.nan, "b": 0.5}, {})[0] == pytest.approx({"a": 0, "b": 1})


def test_zscore_merge_lets_the_leg_whose_best_stands_out_lead() -> None:
    # The vector leg's best hit stands far above a crowd of alike candidates; the keyword
    # leg's candidates all score about the same (common words). Dividing BM25 by its best
    # puts that crowd near 1, so the weighted merge lets it win; in standard deviations the
    # keyword crowd is flat and the vector's standout leads.
    vector = {"x": 0.70, **{f"n{i:02}": 0.50 - 0.001 * i for i in range(40)}}
    text = {"n20": 10.5, **{f"n{i:02}": 10.0 - 0.01 * i for i in range(21, 40)}}
    spread = merge_legs(vector, text, 0.5, 0.5, method="zscore")
    assert max(spread.values(), key=lambda m: m.merged).key == "x"
    for m in spread.values():
        assert m.merged == pytest.approx(0.5 * m.vector_norm + 0.5 * m.text_norm)
        assert 0.0 <= m.vector_norm <= 1.0 and 0.0 <= m.text_norm <= 1.0
    weighted = merge_legs(vector, text, 0.5, 0.5, method="weighted")
    assert max(weighted.values(), key=lambda m: m.merged).key == "n20"


def test_zscore_merge_leaves_a_lone_leg_its_scores() -> None:
    alone = merge_legs(None, {"b": 6.0, "c": 3.0}, 0.7, 0.3, method="zscore")
    assert alone["c"].merged == pytest.approx(0.5)
    vector_alone = merge_legs({"a": 0.8, "b": 0.4, "c": 0.2}, None, 0.7, 0.3, method="zscore")
    assert vector_alone["b"].merged == pytest.approx(1 / 3)


@pytest.mark.parametrize("method", ["weighted", "zscore", "rrf"])
def test_a_chunk_without_a_vector_yet_keeps_its_keyword_score_alone(method: MergeMethod) -> None:
    # While vectors are being built: chunk 3 has none, chunk 2 has one that scored low.
    vector = {1: 0.9, 2: 0.1}
    text = {2: 4.0, 3: 4.0}
    merged = merge_legs(vector, text, 0.5, 0.5, method=method, vector_known={1, 2})
    assert merged[3].vector_raw is None and merged[3].merged == merged[3].text_norm
    # Known to both legs, chunk 2 is weighed as ever: its weak vector score counts against it.
    assert merged[2].merged < merged[3].merged
    # Without the rule, a chunk missing from the vector leg scores 0 there.
    assert merge_legs(vector, text, 0.5, 0.5, method=method)[3].merged < merged[3].merged
