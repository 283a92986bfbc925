"""Is the keyword index current? The one decision sync, status, doctor and search put in their
own words.

The keyword index is derived from the store and stamped with the store generation it
reflects. It is current when it opens and carries the store's generation; behind when it
opens but reflects an earlier one (a writer is between a store commit and the keyword update,
or died there), and then still serves that state; unusable when it is missing, was made by
another analyzer or format, or is damaged (`damaged`: a query failed on it although it opens).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from apus.index.keyword import KeywordIndex

FreshnessState = Literal["current", "behind", "unusable"]


@dataclass(frozen=True)
class KeywordFreshness:
    """current, behind (usable: it serves the generation it reflects until a sync catches
    up) or unusable (`reason` says why: only a rebuild from the store repairs it)."""

    state: FreshnessState
    generation: int | None = None  # the store generation the index reflects, when usable
    reason: str = ""

    @property
    def current(self) -> bool:
        return self.state == "current"

    @property
    def usable(self) -> bool:
        return self.state != "unusable"


DAMAGED = "keyword index damaged"


def keyword_freshness(
    keyword: KeywordIndex, generation: int, *, damaged: bool = False, keep_open: bool = False
) -> KeywordFreshness:
    """`keyword` against the store at `generation`. `damaged`: a query failed on the index
    as it is now, so it is unusable whatever its stamp says; `keep_open`: a searcher about to
    search it keeps the reader opened to check it (`KeywordIndex.state`)."""
    if damaged:
        return KeywordFreshness("unusable", reason=DAMAGED)
    state = keyword.state(keep_open=keep_open)
    if not state.usable:
        return KeywordFreshness("unusable", reason=state.reason)
    if state.generation != generation:
        return KeywordFreshness("behind", state.generation)
    return KeywordFreshness("current", generation)
