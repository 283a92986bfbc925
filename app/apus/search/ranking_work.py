"""What ranking learns in one search, kept for its every stage (`RankingWork`): the facts,
path tiers, records, snippets and term sets of the chunks it weighed or showed, and the notes
the query names."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from apus.index.store import ChunkFacts, ChunkRecord
from apus.search.generation import Admitted
from apus.search.options import ResolvedOptions
from apus.search.query import ParsedQuery
from apus.search.ranking import PathTier
from apus.search.snippet import Snippet, make_snippet
from apus.vault.annotations import without_annotations
from apus.vault.text_terms import TextTerms

# The media of `extraPaths` are imported when a search shows one.
if TYPE_CHECKING:
    from apus.index.media import MediaFacts
    from apus.search.rerank.stage import RerankOutcome


@dataclass
class RankingWork:
    """What ranking learns in one search, kept for its every stage: the merged stage ranks
    the keyword stage's chunks again, and nothing about a chunk but its score has changed.
    Candidates are weighed without their texts; the records of the hits shown are read
    then."""

    query: ParsedQuery
    options: ResolvedOptions
    admitted: Admitted | None
    today: dt.date
    named: set[int] | None = None  # first chunks of the notes the query names
    facts: dict[int, ChunkFacts] = field(default_factory=dict)  # read from the store
    tiers: dict[int, PathTier] = field(default_factory=dict)
    records: dict[int, ChunkRecord] = field(default_factory=dict)  # of the chunks shown
    snippets: dict[int, Snippet] = field(default_factory=dict)
    # The terms of a chunk's text by its distinct words (`TextTerms`): MMR's term set and
    # its snippet's matches, with no `Token` for each word.
    text_terms: dict[int, TextTerms] = field(default_factory=dict)
    media: dict[str, MediaFacts | None] = field(default_factory=dict)
    # The last ranking's second stage: its report, and each reranked chunk's scores.
    rerank: RerankOutcome | None = None
    reranked: dict[int, tuple[float, float]] = field(default_factory=dict)

    def snippet_of(self, chunk: ChunkRecord) -> Snippet:
        """A shown chunk's snippet, made once a search."""
        snippet = self.snippets.get(chunk.id)
        if snippet is None:
            terms = frozenset(self.query.terms)
            text = chunk.text
            shown = without_annotations(text)
            # Without annotations the snippet's text is the chunk's: MMR's analysis serves it.
            matches = self._text_terms_of(chunk).spans(terms) if shown is text else None
            snippet = make_snippet(shown, terms, matches=matches)
            self.snippets[chunk.id] = snippet
        return snippet

    def term_set_of(self, chunk: ChunkRecord) -> frozenset[str]:
        """The folded terms of a chunk's text (`TextTerms.terms`), found once a search and
        kept for its snippet."""
        return self._text_terms_of(chunk).terms

    def _text_terms_of(self, chunk: ChunkRecord) -> TextTerms:
        found = self.text_terms.get(chunk.id)
        if found is None:
            found = self.text_terms[chunk.id] = TextTerms(chunk.text)
        return found
