"""Snippets: the passage of a chunk around the query's matched words, with highlight spans."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from apus.vault.text import term_spans

SNIPPET_CHARS = 240
# `\s` is `str.isspace` for str patterns: the runs a result line shows as one space.
_SPACE_RUN_RE = re.compile(r"\s+")
# The runs that move what follows them: a run of one character becomes one space in place.
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
    order, when already found (`term_spans`: a search finds them from the analysis of the
    chunk that MMR made, `TextTerms`)."""
    if not query_terms:
        matches = []
    elif matches is None:
        matches = term_spans(chunk_text, query_terms)
    if matches:
        best_start, best_count = matches[0][0], 0
        right = 0
        for left, (token_start, _) in enumerate(matches):
            right = max(right, left)
            while right < len(matches) and matches[right][1] - token_start <= width:
                right += 1
            if right - left > best_count:
                best_start, best_count = token_start, right - left
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
    collapsed = _SPACE_RUN_RE.sub(" ", text)
    # Only runs of two or more characters shift offsets (most runs are one space).
    runs = [match.span() for match in _LONG_SPACE_RUN_RE.finditer(text)] if spans else []
    moved = tuple((_collapsed_offset(runs, s), _collapsed_offset(runs, e)) for s, e in spans)
    stripped = collapsed.lstrip()
    offset = len(collapsed) - len(stripped)
    stripped = stripped.rstrip()
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
