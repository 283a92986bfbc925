"""Deterministic ranking passes: recency decay, importance multiplier and path tiers."""

from __future__ import annotations

import enum
import math
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import islice
from typing import TypeVar

from apus.vault.text import fold, tokenize

T = TypeVar("T")

# Product default: a dated note from a month ago has half the freshness of today's.
DEFAULT_HALF_LIFE_DAYS = 30.0
# How much of a result's score recency can take away: its score is multiplied by
# `floor + (1 - floor)·decay`, so the oldest note keeps `floor` of its relevance. Decay alone
# (floor 0) multiplies a note from a year back by 2^-12 and erases every old answer (LoCoMo
# evidence Recall@5 0.31 against 0.82 without decay); the floor keeps recency a tie-breaker
# between comparably relevant notes. LoCoMo evidence Recall@5 with "today" the day after
# each conversation (dev / report conversations, hybrid at equal weights): MiniLM
# floor 0.7 0.815 / 0.798, 0.8 0.814 / 0.811, 0.9 0.821 / 0.813, no decay 0.824 / 0.816;
# EmbeddingGemma (dev) 0.848, 0.851, 0.862, 0.855. 0.9 costs nothing measurable, and still
# puts today's note ahead of an equally relevant older one.
DEFAULT_RECENCY_FLOOR = 0.9

# Importance 5 of 1..10 is neutral: 0.75 + 0.05·5 = 1.0, so the range spans 0.8..1.25.
_IMPORTANCE_BASE = 0.75
_IMPORTANCE_STEP = 0.05
_IMPORTANCE_MIN = 1
_IMPORTANCE_MAX = 10

# A one-character query is a substring of nearly every path; it says nothing about the file.
_MIN_PARTIAL_LEN = 2


def recency_factor(
    note_date: date | None,
    today: date,
    half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
    enabled: bool = True,
) -> float:
    """`0.5 ** (age_days / half_life_days)`; 1.0 for evergreen notes or when disabled.

    A note dated in the future has age 0 (a plan for next week is as fresh as today's note,
    never fresher).
    """
    if not enabled or note_date is None:
        return 1.0
    if not half_life_days > 0:
        raise ValueError(f"half_life_days must be positive, got {half_life_days!r}")
    age_days = max((today - note_date).days, 0)
    # float ** float is typed Any (a negative base gives a complex); 0.5 ** x is a float.
    return float(0.5 ** (age_days / half_life_days))


def recency_weight(decay: float, floor: float = DEFAULT_RECENCY_FLOOR) -> float:
    """What a decay factor multiplies a score by: `floor + (1 - floor)·decay`, in [floor, 1].

    `floor` 0 is the plain multiplication by the decay; 1 turns recency off.
    """
    floor = min(max(floor, 0.0), 1.0)
    return floor + (1.0 - floor) * decay


def importance_factor(importance: float | None) -> float:
    """`0.75 + 0.05·importance` for importance in 1..10; anything else is neutral (1.0).

    Frontmatter is user-written, so out-of-range, non-numeric and boolean values (YAML turns
    `importance: yes` into True) are ignored rather than trusted.
    """
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        return 1.0
    if math.isnan(importance) or not _IMPORTANCE_MIN <= importance <= _IMPORTANCE_MAX:
        return 1.0
    return _IMPORTANCE_BASE + _IMPORTANCE_STEP * importance


class PathTier(enum.IntEnum):
    """How a query matches a note's relative path; higher tiers rank ahead of lower ones."""

    NONE = 0
    PARTIAL = 1
    STEM = 2
    BASENAME = 3
    EXACT = 4


def normalise_path(text: str) -> str:
    """Folded, trimmed, forward-slashed path without a leading `./`."""
    # Folding plain ASCII is lowering it (no marks to drop, nothing to compose).
    folded = text.lower() if text.isascii() else fold(text)
    path = folded.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def path_words(path: str) -> frozenset[str]:
    """The folded words of a normalised path without its extension: what a partial tier
    matches whole (`apus.search.path_words` holds them for every indexed path)."""
    return frozenset(token.term for token in tokenize(posixpath.splitext(path)[0]))


@dataclass(frozen=True)
class QueryPath:
    """A query read as a path, folded once: what every candidate's path is tiered against."""

    form: str  # normalised like a stored path (`normalise_path`)
    words: tuple[str, ...]  # its folded words
    has_separator: bool

    @classmethod
    def of(cls, query: str) -> QueryPath:
        form = normalise_path(query)
        words = tuple(token.term for token in tokenize(form))
        return cls(form, words, any(sep in form for sep in "/.-_"))

    def tier(self, rel_path: str) -> PathTier:
        """How this query names `rel_path`: exact > basename > stem > partial > none."""
        if not self.form or not rel_path:
            return PathTier.NONE
        path = normalise_path(rel_path)
        if rel_path.isascii() and not self._may_name(path):
            # Most candidates: the query is no part of the path, nor are its words.
            return PathTier.NONE
        return self.tier_of_normalised(path, lambda: set(self.words) <= path_words(path))

    def tier_of_normalised(self, path: str, holds_words: Callable[[], bool]) -> PathTier:
        """`tier` of a path already normalised; `holds_words`: whether every word of the
        query is a word of the path without its extension (asked only when it decides)."""
        q = self.form
        if not q or not path:
            return PathTier.NONE
        if q == path:
            return PathTier.EXACT
        basename = posixpath.basename(path)
        if q == basename:
            return PathTier.BASENAME
        if q == posixpath.splitext(basename)[0]:
            return PathTier.STEM
        if len(q) >= _MIN_PARTIAL_LEN and self._names_part_of(path, holds_words):
            return PathTier.PARTIAL
        return PathTier.NONE

    def _may_name(self, path: str) -> bool:
        """Whether this query can tier the normalised ASCII `path` at all: every tier needs
        the query, or each of its words, inside the path (an ASCII path's words are its
        lowered substrings), so a path without them is NONE without being tokenised."""
        return self.form in path or (bool(self.words) and all(word in path for word in self.words))

    def _names_part_of(self, path: str, holds_words: Callable[[], bool]) -> bool:
        """A query names part of a path when it is a run of whole path words ("homelab",
        "projects/homelab") or, containing a separator, a plain substring ("lab-k3s")."""
        if self.has_separator and self.form in path:
            return True
        # Whole words only: "or" must not tier `home-network.md`, nor "md" every note.
        return bool(self.words) and holds_words()


@dataclass(frozen=True)
class RankFactors:
    """The multipliers and tier applied to one candidate's merged score: `recency` is the
    note's decay, `recency_weight` what that decay multiplies the score by."""

    recency: float
    importance: float
    tier: PathTier
    recency_weight: float = 1.0
    language: float = 1.0  # languageWeight for a note in another language than the query's
    curated: float = 1.0  # curatedWeight for a passage of the agent's own memory


def final_score(merged: float, factors: RankFactors) -> float:
    """Relevance × recency weight × importance × curated × language (the tier only orders)."""
    return merged * factors.recency_weight * factors.importance * factors.curated * factors.language


def readable_score(score: float) -> float:
    """A score as the faces report it: six significant digits, so that two results that rank
    apart never show the same number and a small score never reads as 0."""
    return float(f"{score:.6g}")


def rank_key(final: float, tier: PathTier) -> tuple[int, float]:
    """Ascending sort key: higher path tier first, then higher score."""
    return (-int(tier), -final)


def select_with_min_score(
    items: Sequence[T],
    *,
    score: Callable[[T], float],
    is_keyword_match: Callable[[T], bool],
    min_score: float,
    limit: int,
) -> list[T]:
    """Apply `minScore` to best-first `items` without losing keyword matches.

    `score` is relevance before recency and importance: those re-order results, they never
    decide whether one is shown (as MMR only re-orders).

    Items scoring at least `min_score` are taken first (up to `limit`); any slots left are
    filled with keyword matches below the threshold, in order. When nothing passes, that fill
    is exactly "keep the keyword matches". Semantic-only items below `min_score` are never
    returned. The result keeps the input's best-first order.
    """
    if limit <= 0:
        return []
    chosen = [i for i, item in enumerate(items) if score(item) >= min_score][:limit]
    if len(chosen) < limit:
        taken = set(chosen)
        fill = (i for i, item in enumerate(items) if i not in taken and is_keyword_match(item))
        chosen.extend(islice(fill, limit - len(chosen)))
    return [items[i] for i in sorted(chosen)]
