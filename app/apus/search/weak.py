"""Weak hits: passages only the vector leg found, at a cosine that a vault which cannot answer
the question reaches as easily.

The vector leg always returns its nearest chunks, so a question the notes say nothing about
still gets passages, with relevances like those of real answers. What tells them apart is the
raw cosine of the query to the passage, and where that lies depends on the model: each
threshold below was measured for one model family (`apus.embed.prefixes`), or, in the family
"none" that every unrecognised model falls in, for one model by name; a model with no
measured threshold flags nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from apus.search.results import SearchHit

if TYPE_CHECKING:
    from apus.embed.base import Embedder


@dataclass(frozen=True)
class _Measured:
    family: str  # the prefix scheme's name
    model: str  # "" for every model of the family, else a word the model's name holds
    below: float  # a vector-only hit whose cosine is below this is weak


# `tests/support/weak_hits.py` (figures from `apus.benchmarks.weak_hits`): top 5 hybrid hits
# with the product defaults, questions of conversations (LoCoMo) and of documents (SciFact
# claims, 1,500 abstracts) asked in their own vault and in vaults that cannot answer them: the
# highest threshold that at most 5% of the relevant hits lie below, chosen on the tuning half
# and checked on the held-out half.
_THRESHOLDS: tuple[_Measured, ...] = (
    # all-MiniLM-L6-v2 (Q8_0): relevant hits' cosines, 5th percentile, 0.20 on conversations
    # and 0.38 on documents; the vector-only hits of unanswerable questions, median 0.11 and
    # 0.20. At 0.20, 4.8% of the relevant hits lie below it (tuning; 3.6% and 0.4% held out)
    # but none is vector-only, so none is flagged; held out, 92% (conversations) and 53%
    # (documents) of the unanswerable questions' vector-only hits are.
    _Measured("none", "minilm-l6", 0.20),
    # EmbeddingGemma-300M (Q4_0; SciFact with 400 abstracts): relevant hits' cosines, 5th
    # percentile, 0.38 on conversations and 0.46 on documents; the vector-only hits of
    # unanswerable questions, median 0.15 and 0.20, 95th percentile 0.29 and 0.27. At 0.37,
    # 2.9% and 0.4% of the relevant hits lie below it (tuning; 2.7% and 0.7% held out) and
    # none is flagged; held out, all but 0.1% of the unanswerable questions' vector-only hits
    # are. The same rule holds for every model of the family (its prefixes are the same).
    _Measured("embeddinggemma", "", 0.37),
)


def weak_threshold(prefix_scheme: str, model: str) -> float | None:
    """The cosine below which a vector-only hit is weak for this model, or None (not measured:
    nothing is flagged). `prefix_scheme` as identities record it (`name@version` or `name`)."""
    family = prefix_scheme.split("@", 1)[0].strip().lower()
    name = model.lower()
    for measured in _THRESHOLDS:
        if measured.family == family and measured.model in name:
            return measured.below
    return None


def threshold_for(embedder: Embedder | None) -> float | None:
    """The threshold of the model an embedder runs (None without one)."""
    from apus.embed.base import EmbeddingError

    if embedder is None:
        return None
    try:
        identity = embedder.identity  # known once the query was embedded: asks nothing more
    except EmbeddingError:
        return None
    return weak_threshold(identity.prefix_scheme, identity.model)


def weak_chunks(hits: Sequence[SearchHit], embedder: Embedder | None) -> frozenset[int]:
    """The chunk ids of the weak hits among `hits`, for the model `embedder` runs."""
    if not found_by_meaning_alone(hits):
        return frozenset()
    threshold = threshold_for(embedder)
    return frozenset(hit.chunk_id for hit in hits if is_weak(hit, threshold))


def found_by_meaning_alone(hits: Sequence[SearchHit]) -> bool:
    """Whether only the vector leg found any of `hits`: without one, none is weak (and the
    model need not be asked for its threshold)."""
    return any(hit.legs == ("vector",) for hit in hits)


def is_weak(hit: SearchHit, threshold: float | None) -> bool:
    """Whether only the vector leg found the passage (no word of the query, not its path), at
    a cosine below `threshold`."""
    cosine = hit.explain.vector_raw
    return (
        threshold is not None
        and hit.legs == ("vector",)
        and cosine is not None
        and (cosine < threshold)
    )
