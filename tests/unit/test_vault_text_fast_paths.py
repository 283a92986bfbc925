"""The ASCII fast paths of folding and tokenizing give exactly what the Unicode paths give."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from apus.vault import marks_table
from apus.vault.text import (
    _CJK,
    _HANGUL_CONT,
    _fold_unicode,
    _mark_classes,
    _scan_marks,
    _tokenize_unicode,
    _within_bmp,
    fold,
    keyword_term,
    keyword_terms,
    tokenize,
)
from apus.vault.text_terms import TextTerms, term_spans

# Plain ASCII (the fast paths), with accents, combining marks, CJK, Hangul, fullwidth and
# other scripts mixed in (the Unicode paths), so both sides of every `isascii` test are met.
_ASCII = st.characters(min_codepoint=0, max_codepoint=0x7F)
_MIXED = st.one_of(
    _ASCII,
    st.sampled_from("éÉßİıﬁ\u0301\u0308\u3099が日本語한국어ｶﾞ_-—\u00a0\u2028"),
    st.characters(),
)
_TEXTS = st.one_of(st.text(_ASCII, max_size=200), st.text(_MIXED, max_size=200))


@settings(max_examples=500)
@given(_TEXTS)
def test_tokenize_gives_the_tokens_of_the_unicode_path(text: str) -> None:
    assert list(tokenize(text)) == list(_tokenize_unicode(text))


@settings(max_examples=500)
@given(_TEXTS)
def test_fold_gives_the_folding_of_the_unicode_path(text: str) -> None:
    assert fold(text) == _fold_unicode(text)


@settings(max_examples=500)
@given(_TEXTS)
def test_keyword_terms_are_the_stems_of_the_tokens(text: str) -> None:
    assert keyword_terms(text) == [keyword_term(token.term) for token in _tokenize_unicode(text)]


@settings(max_examples=300)
@given(_TEXTS, _TEXTS)
def test_no_term_spans_a_line_break(head: str, tail: str) -> None:
    # The keyword index takes a chunk's repeated leading lines as a prefix of its body's terms.
    assert keyword_terms(f"{head}\n{tail}") == keyword_terms(head) + keyword_terms(f"\n{tail}")


def test_the_stored_mark_classes_are_the_scanned_ones() -> None:
    # On the Unicode version it was made from, the stored table is what `_mark_classes`
    # gives; on another, it scans.
    assert unicodedata.unidata_version != marks_table.UNIDATA_VERSION or (
        _mark_classes() == (marks_table.DROPPED, marks_table.MARKS)
    )
    assert _mark_classes() == _scan_marks()


@settings(max_examples=500)
@given(_TEXTS)
def test_text_terms_are_the_terms_of_tokenize(text: str) -> None:
    assert TextTerms(text).terms == frozenset(token.term for token in tokenize(text))


_QUERY_WORDS = st.lists(
    st.sampled_from(["a", "git", "gitk", "k3s", "cafe", "日本", "strasse", "x1", "é"]), max_size=4
)


@settings(max_examples=500)
@given(_TEXTS, _QUERY_WORDS)
def test_term_spans_are_the_spans_of_the_matching_tokens(text: str, words: list[str]) -> None:
    terms = frozenset(words)
    expected = [(t.start, t.end) for t in tokenize(text) if t.term in terms]
    assert term_spans(text, terms) == expected


def test_term_spans_find_whole_words_only() -> None:
    text = "Git: gitk, GIT and git2 — legit"
    assert [text[s:e] for s, e in term_spans(text, frozenset({"git"}))] == ["Git", "GIT"]


# Within U+FFFF only (the patterns cut to it), with marks, CJK and Hangul continuations.
_BMP = st.one_of(
    st.sampled_from("\u0301\u0308\u0915\u093f\u0e34\u3099\u302a日本語が한\u1100\u1161\u11a8ｶﾞ"),
    st.characters(max_codepoint=0xFFFF),
)


@settings(max_examples=500)
@given(st.text(_BMP, max_size=200))
def test_terms_of_text_within_the_bmp_are_those_of_the_full_patterns(text: str) -> None:
    assert list(tokenize(text)) == list(_tokenize_unicode(text))
    assert keyword_terms(text) == [keyword_term(token.term) for token in _tokenize_unicode(text)]
    assert TextTerms(text).terms == frozenset(token.term for token in _tokenize_unicode(text))


def test_classes_cut_to_the_bmp_hold_exactly_their_code_points_there() -> None:
    for body in (_mark_classes()[1], _CJK, _HANGUL_CONT):
        full, cut = re.compile(f"[{body}]"), re.compile(f"[{_within_bmp(body)}]")
        for code in range(0x10000):
            assert bool(full.match(chr(code))) == bool(cut.match(chr(code))), hex(code)
