"""What a search answers: its hits (`SearchHit`, each with its `Explanation`), the report of
each leg (`LegReport`) and the repairs a leg found for a sync to do (`Repair`).

The faces, the session and the agents' tools read these; they need no part of the Searcher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from apus.search.options import Mode
from apus.search.time_words import DateWindow

if TYPE_CHECKING:
    from apus.index.media import MediaFacts

# What a leg found that a sync should do: "keyword" — the keyword index is missing, does not
# open or is behind the store (bring it up to date); "keyword-damaged" — a query failed on
# an index that opens (only a rebuild helps, whatever its stamp says); "vectors" —
# vectors.faiss is missing, damaged or of another width, or a re-embed is due (the next sync
# makes them from the store).
Repair = Literal["keyword", "keyword-damaged", "vectors"]


@dataclass(frozen=True)
class LegReport:
    """How one leg of a search went: whether it ran, why not or with what caveat, and what
    it found a sync should do."""

    ran: bool
    reason: str = ""  # why it did not run, or a caveat ("index update in progress")
    fix: str = ""  # what makes it run, when something can
    candidates: int = 0
    ms: float = 0.0
    # The vector leg only, while its vectors are being built: the share of passages it
    # searched (None: all of them).
    coverage: float | None = None
    repair: Repair | None = None  # what this query found a sync should do


@dataclass(frozen=True)
class Explanation:
    """How a hit's score was made, factor by factor (`--explain`)."""

    vector_raw: float | None
    vector_norm: float
    text_raw: float | None
    text_norm: float
    merged: float  # the relevance minScore is applied to
    recency: float  # the note's decay: 0.5 every half-life, 1.0 for evergreen notes
    recency_weight: float  # what the decay multiplies the score by (never below the floor)
    importance: float
    tier: str
    mmr_position: int | None  # 1-based position chosen by MMR; None when MMR was off
    rerank: float | None = None  # the reranker's score of the passage (None: not reranked)
    reranked: float | None = None  # the relevance after the blend: what ordering weighs
    # relevance × recency weight × importance × curated × language, before diversity
    final: float = 0.0
    # What MMR multiplied `final` by (1.0: nothing above repeats it, or MMR was off)
    diversity: float = 1.0
    # 1.0, or languageWeight for a note in another language than the query's candidates'
    language: float = 1.0
    # 1.0, or curatedWeight for a passage of the agent's own memory
    curated: float = 1.0


@dataclass(frozen=True)
class SearchHit:
    """One passage of an answer: where it is, its score and snippet, and how it was found."""

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
    source: str = "memory"
    media: MediaFacts | None = None  # an image or audio file: its type and size
    # Found by meaning alone, no closer than notes that cannot answer come (`search/weak.py`):
    # set by the session, which knows the model.
    weak: bool = False

    @property
    def citation(self) -> str:
        """Where the passage is, as agents cite it: `path#L12-L30`."""
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


@dataclass(frozen=True)
class SearchResponse:
    """One answer to a query: its hits best first, and how each leg went."""

    query: str
    mode: Mode
    hits: list[SearchHit]
    legs: dict[str, LegReport] = field(default_factory=dict)
    ms: float = 0.0
    final: bool = True  # False for keyword results that merged results will replace
    # The dates read from the query's own words ("what did I decide last week"), and whether
    # they held nothing, so that the notes of any date were searched instead.
    time_window: DateWindow | None = None
    widened: bool = False

    @property
    def repairs(self) -> frozenset[Repair]:
        """What this search found that a sync should do (the session acts on it, once)."""
        return frozenset(leg.repair for leg in self.legs.values() if leg.repair is not None)

    @property
    def coverage(self) -> float | None:
        """The share of passages search by meaning covered, when it covered only some."""
        vector = self.legs.get("vector")
        return vector.coverage if vector is not None and vector.ran else None

    @property
    def ran(self) -> Mode:
        """The mode that really answered: `mode` asks for both legs, `ran` says "keyword"
        when the vector leg could not run (no vectors yet, provider off or down)."""
        if not self.legs:  # an answer without legs (related notes) is its mode
            return self.mode
        vector = self.legs.get("vector")
        keyword = self.legs.get("keyword")
        vector_ran = vector is not None and vector.ran
        if vector_ran and keyword is not None and keyword.ran:
            return "hybrid"
        return "vector" if vector_ran else "keyword"
