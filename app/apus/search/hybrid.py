"""Score normalisation for the vector and keyword legs and their weighted merge."""

from __future__ import annotations

import math
import re
from collections.abc import Container, Hashable, Mapping
from typing import Generic, Literal, NamedTuple, TypeVar

K = TypeVar("K", bound=Hashable)

# How each leg's scores are put on one scale before the weighted sum: "weighted" rescales
# the scores themselves (cosine over the candidates, BM25 over the best), "zscore" measures
# them in standard deviations of the leg's own candidates (so a leg whose best hit stands far
# out of its crowd weighs more for that query), "rrf" uses only the ranks (reciprocal rank
# fusion), which no leg's score distribution can skew.
MergeMethod = Literal["weighted", "zscore", "rrf"]
# RRF's rank offset: Cormack et al.'s 60, the usual choice; a larger k flattens the ranks.
DEFAULT_RRF_K = 60

# The vector leg's weight when the settings name none, whatever the model: equal weights.
# Chosen across documents and conversations, with both models (`apus eval --beir` on
# SciFact train halves, `apus eval --locomo` on dev/report conversations; the issue notes
# have the tables). A model-specific weight does not carry: EmbeddingGemma's 0.99, best on
# SciFact train (queries that model has very likely seen: 0.90 there, 0.78 on held-out
# judgments), scores like vector alone on held-out documents, where equal weights gain
# +0.028, and on conversations it loses to exact words (LoCoMo evidence Recall@5 0.78 / 0.75
# at 0.99 against 0.86 / 0.84 at 0.5; all-MiniLM-L6-v2 0.82 / 0.82).
DEFAULT_VECTOR_WEIGHT = 0.5
# A query that is one or two words, one of them an identifier (`JIRA-4821`, `gateway-host`,
# `k3s`), looks a thing up by name: exact words lead whatever the model. SciFact has no such
# query (its shortest have three words), so this is a product rule, not a measured one.
LOOKUP_VECTOR_WEIGHT = 0.3
_IDENTIFIER = re.compile(r"\w*\d\w*|\w+(?:[-_./:#]\w+)+")


def _unit(value: float) -> float:
    """Clamp to [0, 1]; NaN counts as 0 so one bad score cannot poison a sort."""
    if math.isnan(value):
        return 0.0
    return min(max(value, 0.0), 1.0)


def normalise_weights(vector_weight: float, text_weight: float) -> tuple[float, float]:
    """Clamp both weights to [0, 1] and rescale them to sum to 1.

    Both zero would make every merged score 0 (and nothing could pass `minScore`), which is
    never what a user means, so that case falls back to equal weights instead of dividing by
    zero.
    """
    wv, wt = _unit(vector_weight), _unit(text_weight)
    total = wv + wt
    if total == 0.0:
        return 0.5, 0.5
    return wv / total, wt / total


def is_identifier_lookup(query: str) -> bool:
    """Whether `query` is one or two words and one of them an identifier."""
    words = [word.strip("\"'`()[]<>,;") for word in query.split()]
    return 0 < len(words) <= 2 and any(_IDENTIFIER.fullmatch(word) for word in words)


def leg_weights(
    vector_weight: float | None, text_weight: float | None, identifier_lookup: bool = False
) -> tuple[float, float]:
    """The weights a query merges with: the configured ones (one of them alone means the
    other is what is left of 1), else `LOOKUP_VECTOR_WEIGHT` for an identifier lookup
    (`is_identifier_lookup`), else `DEFAULT_VECTOR_WEIGHT`."""
    if vector_weight is not None and text_weight is not None:
        return normalise_weights(vector_weight, text_weight)
    if vector_weight is not None:
        return normalise_weights(vector_weight, 1.0 - _unit(vector_weight))
    if text_weight is not None:
        return normalise_weights(1.0 - _unit(text_weight), text_weight)
    if identifier_lookup:
        return LOOKUP_VECTOR_WEIGHT, 1.0 - LOOKUP_VECTOR_WEIGHT
    return DEFAULT_VECTOR_WEIGHT, 1.0 - DEFAULT_VECTOR_WEIGHT


def normalise_vector_scores(scores: Mapping[K, float]) -> dict[K, float]:
    """Cosine similarities rescaled over the leg's own candidates: weakest 0, best 1.

    Embedding models put every passage in a narrow band of cosine (EmbeddingGemma: roughly
    0.3-0.65), so on the absolute scale the vector leg's spread is a fraction of the keyword
    leg's and a 0.7 weight would not make meaning lead. Rescaling gives both legs the same
    span; measured on SciFact train (800 docs, EmbeddingGemma Q4_0) it lifts hybrid nDCG@10
    from 0.89 to 0.95. A single candidate (or all equal) keeps its clamped cosine.
    """
    clamped = {key: _unit(value) for key, value in scores.items()}
    if not clamped:
        return {}
    low, high = min(clamped.values()), max(clamped.values())
    if high - low < 1e-9:
        return clamped
    return {key: (value - low) / (high - low) for key, value in clamped.items()}


def normalise_text_scores(scores: Mapping[K, float]) -> dict[K, float]:
    """BM25 scores divided by the best score in the set (best = 1.0).

    BM25 has no absolute scale, so only ratios within one query mean anything. Dividing by
    the maximum keeps those ratios; min-max would push the weakest candidate to 0 even when it
    matched almost as well as the best. With no positive score there is nothing to scale by
    and every candidate gets 0.
    """
    best = max(scores.values(), default=0.0)
    if math.isnan(best) or best <= 0.0:
        return dict.fromkeys(scores, 0.0)
    return {key: _unit(value / best) for key, value in scores.items()}


def normalise_ranks(scores: Mapping[K, float], k: int = DEFAULT_RRF_K) -> dict[K, float]:
    """Reciprocal-rank scores `(k + 1) / (k + rank)`: the leg's best 1.0, then slowly less.

    Scaled by `k + 1` so that the best candidate of a leg scores 1 like the other
    normalisations, and `minScore` and the weights mean the same whatever the merge. Equal
    scores share the better rank; NaN ranks last.
    """
    ordered = sorted(scores.items(), key=lambda item: _descending(item[1]))
    ranks: dict[K, float] = {}
    rank, previous = 0, None
    for position, (key, value) in enumerate(ordered, start=1):
        if previous is None or _descending(value) != previous:
            rank, previous = position, _descending(value)
        ranks[key] = (k + 1) / (k + rank)
    return ranks


def normalise_spreads(
    vector: Mapping[K, float], text: Mapping[K, float]
) -> tuple[dict[K, float], dict[K, float]]:
    """Each leg's scores in standard deviations above its weakest candidate, both legs then
    divided by the same number (the larger of their best values) so they stay in [0, 1].

    A cosine and a BM25 score mean nothing to each other, but "this hit stands four standard
    deviations above the other candidates" means the same in both legs: per query, the leg
    whose best hit stands out of its crowd counts for more, and a leg whose candidates are
    all alike (a weak model, a query of common words) counts for less. Dividing both legs by
    one number keeps that difference; the weakest candidate and a key missing from a leg
    score 0 there. A leg whose candidates are all equal (or one candidate) has no spread to
    measure and stands one unit above its floor.
    """
    v, t = _spread(vector), _spread(text)
    scale = max(max(v.values(), default=0.0), max(t.values(), default=0.0))
    if scale <= 0.0:
        return v, t
    return {k: x / scale for k, x in v.items()}, {k: x / scale for k, x in t.items()}


def _spread(scores: Mapping[K, float]) -> dict[K, float]:
    values = [0.0 if math.isnan(x) else x for x in scores.values()]
    if not values:
        return {}
    low = min(values)
    mean = sum(values) / len(values)
    deviation = math.sqrt(sum((x - mean) ** 2 for x in values) / len(values))
    if deviation < 1e-9:
        return dict.fromkeys(scores, 1.0)
    return {k: (x - low) / deviation for k, x in zip(scores, values, strict=True)}


def _descending(value: float) -> float:
    return math.inf if math.isnan(value) else -value


class MergedScore(NamedTuple, Generic[K]):
    """One candidate's scores from each leg (raw is None when that leg did not find it).
    A named tuple: a search makes one for each of its hundreds of candidates, at a quarter
    of a frozen dataclass's cost."""

    key: K
    vector_raw: float | None
    vector_norm: float
    text_raw: float | None
    text_norm: float
    merged: float


def merge_legs(
    vector: Mapping[K, float] | None,
    text: Mapping[K, float] | None,
    vector_weight: float = DEFAULT_VECTOR_WEIGHT,
    text_weight: float = 1.0 - DEFAULT_VECTOR_WEIGHT,
    method: MergeMethod = "weighted",
    rrf_k: int = DEFAULT_RRF_K,
    vector_known: Container[K] | None = None,
) -> dict[K, MergedScore[K]]:
    """Merge the two legs' raw scores into `wv·v + wt·t` over the union of their keys, with
    `v` and `t` each leg's normalised score (`method`).

    A key missing from one leg scores 0 there, also when that leg ran and found nothing. A
    leg that did not run at all (`None`) leaves the other leg alone with weight 1: otherwise
    keyword-only search would cap every result at the text weight (0.3 by default) and no
    result could reach an ordinary `minScore`. One leg alone keeps its own scores whatever
    the method: there is nothing to fuse, and recency and importance weigh against them.

    `vector_known` (while vectors are being built: the keys that have one) marks the rest as
    not yet known by meaning rather than scored 0 there: such a key keeps its keyword score
    alone (weight 1), so a note not embedded yet is not pushed below embedded ones.
    """
    if method == "rrf" and vector is not None and text is not None:
        v_norm = normalise_ranks(vector, rrf_k)
        t_norm = normalise_ranks(text, rrf_k)
    elif method == "zscore" and vector is not None and text is not None:
        v_norm, t_norm = normalise_spreads(vector, text)
    else:
        v_norm = normalise_vector_scores(vector or {})
        t_norm = normalise_text_scores(text or {})
    if vector is None:
        wv, wt = 0.0, 1.0
    elif text is None:
        wv, wt = 1.0, 0.0
    else:
        wv, wt = normalise_weights(vector_weight, text_weight)

    # Unknown by meaning: not in the vector leg, nor among the keys that have a vector.
    known = vector_known if vector is not None and text is not None else None
    vector_raw = vector or {}
    text_raw = text or {}
    merged: dict[K, MergedScore[K]] = {}
    for key in (*v_norm, *(k for k in t_norm if k not in v_norm)):
        v = v_norm.get(key, 0.0)
        t = t_norm.get(key, 0.0)
        if known is not None and key not in v_norm and key not in known:
            merged[key] = MergedScore(key, None, 0.0, text_raw.get(key), t, t)
        else:
            found_v = vector_raw.get(key)
            found_t = text_raw.get(key)
            merged[key] = MergedScore(key, found_v, v, found_t, t, wv * v + wt * t)
    return merged
