"""Snippets: the passage of a chunk around the query's matched words, with highlight spans."""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from apus.vault.text_terms import term_spans

SNIPPET_CHARS = 240
# The whitespace runs that move what follows them (`\s` is `str.isspace` for str patterns,
# what `str.split` splits at): a run of one character becomes one space in place.
_LONG_SPACE_RUN_RE = re.compile(r"\s\s+")


@dataclass(frozen=True)
class Snippet:
    text: str
    highlights: tuple[tuple[int, int], ...]  # [start, end) offsets into `text`


def make_snippet(
    chunk_text: str,
    query_terms: frozenset[str],
    width: int = SNIPPET_CHARS,
    *,
    matches: Sequence[tuple[int, int]] | None = None,
) -> Snippet:
    """The window of `width` chars holding the most matched terms (the start when none).

    `matches`: the spans of `chunk_text`'s tokens whose term is one of `query_terms`, in
    `tokenize`'s order, when already found (`term_spans`: a search finds them from the
    analysis of the chunk that MMR made, `TextTerms`)."""
    if not query_terms:
        matches = []
    elif matches is None:
        matches = term_spans(chunk_text, query_terms)
    if matches:
        # Tokens in order end in order too (none holds another), so the matches a window
        # from each one's start holds end before the first that ends beyond it.
        ends = [token_end for _, token_end in matches]
        best_start, best_count = matches[0][0], 0
        for left, (token_start, _) in enumerate(matches):
            count = bisect_right(ends, token_start + width, left) - left
            if count > best_count:
                best_start, best_count = token_start, count
        # Start a little before the first match so it reads in context.
        start = max(0, best_start - width // 6)
    else:
        start = 0
    start = _word_boundary(chunk_text, start)
    end = min(len(chunk_text), start + width)
    window = chunk_text[start:end]
    spans = tuple((s - start, e - start) for s, e in matches if s >= start and e <= end)
    lead = "…" if start > 0 else ""
    tail = "…" if end < len(chunk_text) else ""
    collapsed, spans = _collapse_whitespace(window, spans)
    shift = len(lead)
    return Snippet(lead + collapsed + tail, tuple((s + shift, e + shift) for s, e in _merge(spans)))


def _word_boundary(text: str, index: int) -> int:
    while 0 < index < len(text) and text[index - 1].isalnum() and text[index].isalnum():
        index -= 1
    return index


def _merge(spans: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _collapse_whitespace(
    text: str, spans: tuple[tuple[int, int], ...]
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """One line of text for a result list; highlight offsets follow the collapsing."""
    # Each whitespace run as one space, less the leading and trailing ones, as `split`
    # finds them: 1.6 µs for a window of 240 characters against 5.1 µs for replacing each
    # match of `\s+` and stripping.
    stripped = " ".join(text.split())
    if not spans:
        return stripped, ()
    # Only runs of two or more characters shift offsets (most runs are one space; most
    # windows have none).
    runs = [match.span() for match in _LONG_SPACE_RUN_RE.finditer(text)]
    moved = (
        tuple((_collapsed_offset(runs, s), _collapsed_offset(runs, e)) for s, e in spans)
        if runs
        else spans
    )
    # A leading run is one space once collapsed, and then stripped.
    offset = 1 if text[:1].isspace() else 0
    moved = tuple(
        (max(0, s - offset), min(len(stripped), e - offset)) for s, e in moved if e - offset > 0
    )
    return stripped, moved


def _collapsed_offset(runs: list[tuple[int, int]], index: int) -> int:
    """Where offset `index` of a text lands once each whitespace run in `runs` (those of
    two or more characters) is one space (an offset inside a run lands just after its
    space)."""
    removed = 0
    for start, end in runs:
        if index <= start:
            break
        if index < end:
            return index - removed - (index - start - 1)
        removed += end - start - 1
    return index - removed


def display_columns(char: str) -> int:
    """How many columns a character takes on screen: two for a wide (CJK) one, else one."""
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def within_columns(snippet: Snippet, columns: int) -> Snippet:
    """`snippet` held to `columns` display columns (a CJK character counts two: it says as
    much as a short word), as the window of it holding the most highlights."""
    text = snippet.text
    if len(text) <= columns // 2 or (text.isascii() and len(text) <= columns):
        return snippet
    ends = list(accumulate(display_columns(char) for char in text))
    if ends[-1] <= columns:
        return snippet
    budget = columns - 2  # room for the marks of a cut at either end
    spans = snippet.highlights
    starts = [max(0, start - budget // 6) for start, _ in spans] or [0]
    best_start, best_count = starts[0], -1
    for start in starts:
        limit = (ends[start - 1] if start else 0) + budget
        count = sum(1 for s, e in spans if s >= start and ends[e - 1] <= limit)
        if count > best_count:
            best_start, best_count = start, count
    start = _word_boundary(text, best_start)
    end = bisect_right(ends, (ends[start - 1] if start else 0) + budget)
    if end < len(text):
        # End after a whole word where one ends near the cut (CJK runs have no spaces).
        space = text.rfind(" ", start + (end - start) * 3 // 4, end)
        end = space if space > start else end
    window = text[start:end].strip(" …")
    offset = start + (len(text[start:end]) - len(text[start:end].lstrip(" …")))
    lead = "…" if start > 0 or text.startswith("…") else ""
    tail = "…" if end < len(text) or text.endswith("…") else ""
    shift = len(lead) - offset
    kept = tuple(
        (s + shift, e + shift) for s, e in spans if s >= offset and e <= offset + len(window)
    )
    return Snippet(lead + window + tail, kept)
