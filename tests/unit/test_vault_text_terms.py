"""`TextTerms` (a text's term set and the spans of its matching tokens, found from its
distinct words and CJK runs) gives exactly what tokenising the text token by token gave."""

from __future__ import annotations

import subprocess
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apus.vault.text import (
    ASTRAL_RE,
    Token,
    _cjk_unit_re,
    _token_re,
    fold,
    tokenize,
)
from apus.vault.text_terms import TextTerms


def _reference_tokens(text: str) -> list[tuple[str, int, int]]:
    """The tokens as the tokenizer defined them before `TextTerms`: the full patterns (code
    points beyond U+FFFF included) matched token by token, each word and unit folded."""
    tokens: list[tuple[str, int, int]] = []
    for match in _token_re().finditer(text):
        start, end = match.span()
        if match.lastgroup != "cjk":
            tokens.append((fold(match.group()), start, end))
            continue
        units = [unit.span() for unit in _cjk_unit_re().finditer(text, start, end)]
        if len(units) == 1:
            tokens.append((fold(text[start:end]), start, end))
            continue
        terms = [fold(text[s:e]) for s, e in units]
        tokens.extend(
            (terms[i] + terms[i + 1], units[i][0], units[i + 1][1]) for i in range(len(units) - 1)
        )
    return tokens


def _reference_spans(text: str, terms: frozenset[str]) -> list[tuple[int, int]]:
    return [(start, end) for term, start, end in _reference_tokens(text) if term in terms]


# Pieces of every kind the analysis tells apart. Letters: ASCII words and punctuation,
# Latin letters precomposed, letters that fold to others (ß, İ, the Kelvin and Ohm signs,
# ligatures), Cyrillic and Greek (final sigma), digits of other scripts, underscores.
_LETTERS = [
    *("tar", "start", "Tar", "TAR", "git2", "k3s", "a", "x_y", "-", "—", "...", "café"),
    *("Straße", "strasse", "İstanbul", "\u212aelvin", "\u2126m", "ﬁle", "кошка", "Кошка,"),
    *("ΟΔΟΣ", "οδος", "٣٤"),
]
# CJK without marks: Han, precomposed kana, halfwidth kana without voicing, Hangul
# syllables, compatibility and halfwidth Hangul, CJK that is not a letter (・ ゠ ゛), 々
# and 〇, words touching runs.
_PLAIN_CJK = [
    *("日本", "日本語", "本日", "日", "が", "か\u309b", "ｶ", "한국어", "고양이", "고양"),
    *("\u3131\u314f", "\uffa1\uffc2", "ア・イ", "゠", "々", "〇", "abc日本def"),
]
# Marks and what continues a CJK unit: decomposed (NFD) letters and kana, conjoining Jamo
# (L, V, T: an NFD syllable), halfwidth voicing marks, combining marks alone or after
# punctuation (Mn and Mc: Devanagari, Thai); and code points beyond U+FFFF (Han
# extension B, emoji, mathematical letters).
_OTHERS = [
    *("cafe\u0301", "CAFE\u0301", "\u0301", "-\u0301x", "क\u093e", "हिन्दी", "ภาษาไทย"),
    *("か\u3099", "ｶﾞ", "\u1100\u1161\u11a8", "\u1100\u1161", "日本x\u0301"),
    *("\U00020000\U00020001", "😀", "\U0001d400bc"),
]
_SPACES = [" ", "  ", "\n", "\t", "\u00a0", "\u3000", "\u2028", "\x1c", ""]
# Any character within U+FFFF but a mark: letters only, or plain CJK with them.
_UNMARKED = st.characters(max_codepoint=0xFFFF, exclude_categories=("Mn", "Mc", "Me"))


def _texts(pieces: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.tuples(pieces, st.sampled_from(_SPACES)), max_size=30).map(
        lambda parts: "".join(piece + space for piece, space in parts)
    )


# Texts of each kind `TextTerms` tells apart (letters; CJK without marks; anything), and
# each whole text also in its normal forms (NFD splits kana, Hangul and accented letters).
_TEXTS = st.one_of(
    _texts(st.sampled_from(_LETTERS)),
    _texts(st.one_of(st.sampled_from(_LETTERS + _PLAIN_CJK), _UNMARKED)),
    _texts(st.one_of(st.sampled_from(_LETTERS + _PLAIN_CJK + _OTHERS), st.text(max_size=4))),
)
_FORMS = st.one_of(
    _TEXTS,
    _TEXTS.map(lambda text: unicodedata.normalize("NFD", text)),
    _TEXTS.map(lambda text: unicodedata.normalize("NFC", text)),
)


def _query_terms(text: str, data: st.DataObject) -> frozenset[str]:
    """Some of the text's own terms, parts of them (a word inside a longer one), and others."""
    own = sorted({term for term, _, _ in _reference_tokens(text)})
    chosen = data.draw(st.lists(st.sampled_from(own), max_size=4)) if own else []
    parts = [term[: len(term) // 2] for term in chosen if len(term) > 1]
    others = data.draw(st.lists(st.sampled_from(["tar", "日本", "고양", "cafe", "x"]), max_size=2))
    return frozenset(chosen + parts + others)


@settings(max_examples=1500)
@given(_FORMS, st.data())
def test_terms_and_spans_are_those_of_the_tokens(text: str, data: st.DataObject) -> None:
    terms = _query_terms(text, data)
    analysis = TextTerms(text)
    assert analysis.terms == frozenset(term for term, _, _ in _reference_tokens(text))
    assert analysis.spans(terms) == _reference_spans(text, terms)


@settings(max_examples=500)
@given(_FORMS)
def test_tokenize_gives_the_reference_tokens_as_named_tuples(text: str) -> None:
    tokens = list(tokenize(text))
    assert tokens == _reference_tokens(text)
    assert all(type(token) is Token for token in tokens)


@settings(max_examples=500)
@given(st.text(min_size=1))
def test_the_astral_search_is_max_beyond_the_bmp(text: str) -> None:
    assert (ASTRAL_RE.search(text) is not None) == (max(text) > "\uffff")


@pytest.mark.parametrize(
    ("text", "terms", "found"),
    [
        # Whole words only, whatever their case; a word inside a longer one is not one.
        ("start tar, tar.Tar star", {"tar"}, ["tar", "tar", "Tar"]),
        # Cyrillic (letters only): the same, folded.
        ("Кошка кошкам кошка", {"кошка"}, ["Кошка", "кошка"]),
        # Two spellings of one term, precomposed in one text.
        ("Straße strasse Strasse", {"strasse"}, ["Straße", "strasse", "Strasse"]),
        # A bigram of a run, and the same characters as a run of their own.
        ("日本語 日本 本日", {"日本"}, ["日本", "日本"]),
        # A run of one character is one token; inside a longer run it is none.
        ("日 日本", {"日"}, ["日"]),
        # Korean words are runs: the bigram is found in each.
        ("고양이가 고양 고양이", {"고양"}, ["고양", "고양", "고양"]),
        # Words and runs that touch: CJK ends a word, a word ends a run.
        ("abc日本def", {"abc", "日本", "def"}, ["abc", "日本", "def"]),
        # CJK that is not a letter is still part of its run.
        ("ア・イ ・", {"・イ", "・"}, ["・イ", "・"]),
        # Marks (NFD kana, Devanagari): the text is tokenised.
        ("か\u3099 が", {"が"}, ["か\u3099", "が"]),
        ("क\u093eम काम", {"क\u093eम"}, ["क\u093eम", "काम"]),
        # Beyond U+FFFF: tokenised too.
        (
            "\U00020000\U00020001 日本",
            {"\U00020000\U00020001", "日本"},
            ["\U00020000\U00020001", "日本"],
        ),
    ],
)
def test_spans_find_whole_tokens(text: str, terms: set[str], found: list[str]) -> None:
    spans = TextTerms(text).spans(frozenset(terms))
    assert [text[start:end] for start, end in spans] == found
    assert spans == _reference_spans(text, frozenset(terms))


def test_no_terms_no_spans() -> None:
    assert TextTerms("日本 кошка tar").spans(frozenset()) == []
    assert TextTerms("").terms == frozenset()


def test_text_terms_is_found_where_it_was_named_before_whichever_module_loads_first() -> None:
    for first, second in (("text_terms", "text"), ("text", "text_terms")):
        code = (
            f"import apus.vault.{first}, apus.vault.{second}\n"
            "from apus.vault.text import TextTerms\n"
            "from apus.vault.text_terms import TextTerms as Own\n"
            "assert TextTerms is Own\n"
        )
        subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
