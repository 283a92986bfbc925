"""Snippets: the passage of a chunk around the query's matched words, with highlight spans."""

from __future__ import annotations

from dataclasses import dataclass

from apus.vault.text import tokenize

SNIPPET_CHARS = 240


@dataclass(frozen=True)
class Snippet:
    text: str
    highlights: tuple[tuple[int, int], ...]  # [start, end) offsets into `text`


def make_snippet(
    chunk_text: str, query_terms: frozenset[str], width: int = SNIPPET_CHARS
) -> Snippet:
    """The window of `width` chars holding the most matched terms (the start when none)."""
    matches = [t for t in tokenize(chunk_text) if t.term in query_terms]
    if matches:
        best_start, best_count = matches[0].start, 0
        right = 0
        for left, token in enumerate(matches):
            right = max(right, left)
            while right < len(matches) and matches[right].end - token.start <= width:
                right += 1
            if right - left > best_count:
                best_start, best_count = token.start, right - left
        # Start a little before the first match so it reads in context.
        start = max(0, best_start - width // 6)
    else:
        start = 0
    start = _word_boundary(chunk_text, start)
    end = min(len(chunk_text), start + width)
    window = chunk_text[start:end]
    spans = tuple(
        (t.start - start, t.end - start) for t in matches if t.start >= start and t.end <= end
    )
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
    out: list[str] = []
    mapping: list[int] = []
    previous_space = False
    for char in text:
        mapping.append(len(out))
        if char.isspace():
            if not previous_space:
                out.append(" ")
            previous_space = True
        else:
            out.append(char)
            previous_space = False
    mapping.append(len(out))
    moved = tuple((mapping[s], mapping[e]) for s, e in spans)
    collapsed = "".join(out)
    stripped = collapsed.lstrip()
    offset = len(collapsed) - len(stripped)
    stripped = stripped.rstrip()
    moved = tuple(
        (max(0, s - offset), min(len(stripped), e - offset)) for s, e in moved if e - offset > 0
    )
    return stripped, moved
