"""A snippet is one line: each whitespace run becomes one space, and the highlights move with
the text they mark."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from apus.search.snippet import Snippet, _collapse_whitespace, make_snippet
from apus.vault.text import tokenize
from apus.vault.text_terms import term_spans

# Words, single spaces and longer runs of every kind of whitespace, so that runs of one
# character (which move nothing) and longer ones (which do) are both met.
_PIECES = st.sampled_from(["a", "bc", "Déf", " ", "  ", "\n", " \n\t", "\u2028", "\u00a0 ", "x"])
_TEXTS = st.lists(_PIECES, max_size=40).map("".join)


def _collapsed_by_hand(text: str, index: int) -> int:
    """Where offset `index` lands, counted character by character: the first character of
    each whitespace run becomes the space, the rest of the run is dropped."""
    kept = 0
    for position in range(index):
        if not (text[position].isspace() and position > 0 and text[position - 1].isspace()):
            kept += 1
    return kept


@settings(max_examples=500)
@given(_TEXTS, st.data())
def test_highlights_follow_the_collapsed_text(text: str, data: st.DataObject) -> None:
    bounds = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    spans = tuple((bounds[i], bounds[i + 1]) for i in range(0, len(bounds) - 1, 2))
    collapsed, moved = _collapse_whitespace(text, spans)
    assert collapsed == " ".join(text.split())
    lead = len(text) - len(text.lstrip())
    lead_kept = _collapsed_by_hand(text, lead)
    expected = []
    for start, end in spans:
        start, end = _collapsed_by_hand(text, start), _collapsed_by_hand(text, end)
        if end - lead_kept > 0:
            expected.append((max(0, start - lead_kept), min(len(collapsed), end - lead_kept)))
    assert list(moved) == expected


def test_a_snippet_marks_the_query_words_across_collapsed_runs() -> None:
    snippet = make_snippet("The  heron\n\n  stood\tin the   marsh.", frozenset({"heron", "marsh"}))
    assert snippet.text == "The heron stood in the marsh."
    assert [snippet.text[s:e] for s, e in snippet.highlights] == ["heron", "marsh"]


def _collapse_by_pattern(
    text: str, spans: tuple[tuple[int, int], ...]
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`_collapse_whitespace` as it was defined (its helpers as they were, below): each
    `\\s+` replaced by one space, then stripped, offsets moved by the runs and the lead."""
    runs = [match.span() for match in re.finditer(r"\s+", text)]
    collapsed = re.sub(r"\s+", " ", text)
    moved = tuple((_offset_as_it_was(runs, s), _offset_as_it_was(runs, e)) for s, e in spans)
    stripped = collapsed.lstrip()
    offset = len(collapsed) - len(stripped)
    stripped = stripped.rstrip()
    moved = tuple(
        (max(0, s - offset), min(len(stripped), e - offset)) for s, e in moved if e - offset > 0
    )
    return stripped, moved


def _offset_as_it_was(runs: list[tuple[int, int]], index: int) -> int:
    removed = 0
    for start, end in runs:
        if index <= start:
            break
        if index < end:
            return index - removed - (index - start - 1)
        removed += end - start - 1
    return index - removed


def _word_boundary_as_it_was(text: str, index: int) -> int:
    while 0 < index < len(text) and text[index - 1].isalnum() and text[index].isalnum():
        index -= 1
    return index


def _merge_as_it_was(spans: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


# Every whitespace character `str.split` knows, alone and in runs, among words.
_SPACES = [" ", "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x85", "\xa0", "\u2000", "\u3000"]
_SPACED = st.lists(
    st.one_of(st.sampled_from(["a", "bc", "Déf", "日本", *_SPACES]), st.characters()), max_size=40
).map("".join)


@settings(max_examples=500)
@given(_SPACED, st.data())
def test_collapsing_is_what_the_pattern_gave(text: str, data: st.DataObject) -> None:
    bounds = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    spans = tuple((bounds[i], bounds[i + 1]) for i in range(0, len(bounds) - 1, 2))
    assert _collapse_whitespace(text, spans) == _collapse_by_pattern(text, spans)


@settings(max_examples=300)
@given(_SPACED, st.sets(st.sampled_from(["a", "bc", "def", "日本", "x"]), max_size=3))
def test_a_snippet_of_given_matches_is_the_snippet_that_finds_them(
    text: str, words: set[str]
) -> None:
    terms = frozenset(words)
    matches = [(t.start, t.end) for t in tokenize(text) if t.term in terms]
    assert make_snippet(text, terms, 40, matches=matches) == make_snippet(text, terms, 40)
    assert term_spans(text, terms) == matches


def _snippet_as_it_was(text: str, terms: frozenset[str], width: int) -> Snippet:
    """`make_snippet` as it was defined: each window start tried against each later
    match, whitespace collapsed by pattern."""
    matches = [(t.start, t.end) for t in tokenize(text) if t.term in terms]
    start = 0
    if matches:
        best_start, best_count = matches[0][0], 0
        right = 0
        for left, (token_start, _) in enumerate(matches):
            right = max(right, left)
            while right < len(matches) and matches[right][1] - token_start <= width:
                right += 1
            if right - left > best_count:
                best_start, best_count = token_start, right - left
        start = max(0, best_start - width // 6)
    start = _word_boundary_as_it_was(text, start)
    end = min(len(text), start + width)
    spans = tuple((s - start, e - start) for s, e in matches if s >= start and e <= end)
    lead = "…" if start > 0 else ""
    tail = "…" if end < len(text) else ""
    collapsed, spans = _collapse_by_pattern(text[start:end], spans)
    shift = len(lead)
    merged = _merge_as_it_was(spans)
    return Snippet(lead + collapsed + tail, tuple((s + shift, e + shift) for s, e in merged))


# Words that repeat and overlap (CJK bigrams), among runs of whitespace.
_WORDY = st.lists(
    st.one_of(
        st.sampled_from(["heron", "Heron", "marsh", "日本語", "日本", "고양이", "кошка", *_SPACES]),
        st.characters(),
    ),
    max_size=80,
).map("".join)


@settings(max_examples=500)
@given(
    _WORDY,
    st.sets(st.sampled_from(["heron", "marsh", "日本", "本語", "고양", "кошка", "x"]), max_size=3),
    st.integers(1, 60),
)
# The window that holds the most matches holds the last one to its very end.
@example("heron -------------- heron marsh", {"heron", "marsh"}, 11)
def test_a_snippet_is_what_it_was(text: str, words: set[str], width: int) -> None:
    terms = frozenset(words)
    assert make_snippet(text, terms, width) == _snippet_as_it_was(text, terms, width)
