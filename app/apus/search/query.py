"""A query read once: the words it searches for, their folded terms, whether it looks a thing
up by name, its path form and, for a face that asks, the time window it names."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from apus.errors import ApusError
from apus.search.hybrid import is_identifier_lookup
from apus.search.ranking import QueryPath
from apus.search.time_words import DateWindow, window_in_query
from apus.vault.text import query_terms


class EmptyQueryError(ApusError):
    """A query or message with no words in it: nothing to search for."""


def require_words(text: str, *, what: str = "query") -> None:
    """Refuse a blank query (or recall message) rather than answer it with nothing."""
    if not text.strip():
        raise EmptyQueryError(
            f"The {what} is empty: there is nothing to search for.",
            fix=f"pass the words or the question to look for as the {what}",
        )


@dataclass(frozen=True)
class ParsedQuery:
    """Everything a search derives from its query, derived before the first step runs."""

    text: str  # the words searched for, trimmed: what is embedded, and what answers quote
    terms: tuple[str, ...]  # folded, distinct, function words dropped: the keyword leg's
    identifier_lookup: bool  # one or two words, one an identifier: exact words lead
    path: QueryPath  # the words as a path, for the notes the query names
    window: DateWindow | None = None  # the dates a time expression in the query named

    @classmethod
    def parse(cls, query: str) -> ParsedQuery:
        """The query as it is written (no time expression is looked for: reading one costs
        a date parser, and only a face that filters by date asks for it)."""
        text = query.strip()
        return cls(
            text=text,
            terms=tuple(query_terms(text)),
            identifier_lookup=is_identifier_lookup(text),
            path=QueryPath.of(text),
        )

    @classmethod
    def dated(cls, query: str, *, today: dt.date) -> ParsedQuery:
        """The query with a time expression in it read as a window and taken out of the
        words ("router last week": the router, in last week's dates)."""
        found = window_in_query(query, today=today)
        if found is None:
            return cls.parse(query)
        window, words = found
        return replace(cls.parse(words), window=window)
