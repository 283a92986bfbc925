"""Token counts: the class-counting `_tenths` against the patterns that define it; counts
exactly additive over lines; each chunk's count, summed from its pieces, against the count of
its text; a note's lines as `split_lines` gives them."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from apus.vault.chunk import _body_lines, chunk_note
from apus.vault.markdown import parse_note, split_lines
from apus.vault.text import _CJK, count_tenths, count_tokens

# The definition of a count (and how it was computed before): words, punctuation runs, CJK
# characters and long words, each found by its pattern on the NFC text, CJK blanked out.
_CJK_RUN_RE = re.compile(f"[{_CJK}]+")
_WORD_RE = re.compile(r"[^\W_]+")
_PUNCT_RE = re.compile(r"(?:_|[^\w\s])+")
_LONG_WORD_RE = re.compile(r"[^\W_]{13,}")


def _reference_tenths(text: str) -> int:
    text = unicodedata.normalize("NFC", text)
    blanked, runs = _CJK_RUN_RE.subn(" ", text)
    tenths = 10 * (len(text) - len(blanked) + runs)
    tenths += 13 * len(_WORD_RE.findall(blanked)) + 10 * len(_PUNCT_RE.findall(blanked))
    for match in _LONG_WORD_RE.finditer(blanked):
        tenths += 10 * ((match.end() - match.start() - 1) // 12)
    return tenths


# ASCII (the fast path), then letters, marks, spaces, breaks and punctuation of many scripts,
# CJK, Hangul in NFD, and any code point at all.
_ASCII = st.characters(min_codepoint=0, max_codepoint=0x7F)
_MIXED = st.one_of(
    _ASCII,
    st.sampled_from(
        "éÉßİıﬁ\u0301\u0308\u3099が日本語한국어ｶﾞ々〆_-—\u00a0\u2028\u2029\x85\x1c\v\f"
        "\u0915\u093f\u0e01\u0e34٣۴\u1100\u1161\U00020000"
    ),
    st.characters(),
)
_TEXTS = st.one_of(st.text(_ASCII, max_size=200), st.text(_MIXED, max_size=200))


@settings(max_examples=1000)
@given(_TEXTS)
def test_tenths_are_those_the_patterns_define(text: str) -> None:
    assert count_tenths(text) == _reference_tenths(text)


def test_every_code_point_is_counted_as_the_patterns_count_it() -> None:
    points = [chr(code) for code in range(0x110000) if not 0xD800 <= code < 0xE000]
    for start in range(0, len(points), 4099):
        # Each point between letters, so its class (letter, space, punctuation, CJK) shows.
        text = "".join(f"a{point}b " for point in points[start : start + 4099])
        assert count_tenths(text) == _reference_tenths(text), start


@settings(max_examples=500)
@given(_TEXTS, _TEXTS)
def test_tenths_add_up_exactly_over_lines(head: str, tail: str) -> None:
    joined = f"{head}\n{tail}"
    assert count_tenths(joined) == count_tenths(head) + count_tenths(tail)


_LINE = st.one_of(
    st.just(""),
    st.just("# A heading"),
    st.just("## Sub heading"),
    st.just("```"),
    st.just("~~~"),
    st.just("   # indented heading"),
    st.just("    # code, not a heading"),
    st.text(_MIXED, max_size=30),
    st.lists(st.sampled_from(["lorem", "東京都", "x" * 40, "--", "naïve"]), max_size=60).map(
        " ".join
    ),
)


@settings(max_examples=300)
@given(
    st.lists(_LINE, max_size=60),
    st.sampled_from(["\n", "\r\n", "\r"]),
    st.integers(3, 60),
    st.integers(0, 20),
)
def test_each_chunk_costs_what_its_text_costs(
    lines: list[str], newline: str, budget: int, overlap: int
) -> None:
    # Chunks of whole lines take their count from the pieces they were packed from.
    note = parse_note(newline.join(lines), fallback_title="note")
    for chunk in chunk_note(note, max_tokens=budget, overlap=overlap):
        assert chunk.tokens == count_tokens(chunk.text)


@settings(max_examples=500)
@given(st.text(st.one_of(_MIXED, st.sampled_from("\r\n\n\r")), max_size=120))
def test_a_body_is_split_into_the_lines_split_lines_gives(body: str) -> None:
    assert _body_lines(body) == [line.rstrip("\r\n") for line in split_lines(body)]
