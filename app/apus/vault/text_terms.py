"""A text's terms found from its distinct words and CJK runs, not token by token: the set
of them (what MMR compares) and where the tokens with some terms are (a snippet's
highlights), exactly what `apus.vault.text.tokenize` gives.

Search asks this of every chunk it shows; it is built from the tokenizer's own patterns and
folds (`apus.vault.text`), so the two never disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache

from apus.vault.text import (
    ASCII_WORD_RE,
    ASTRAL_RE,
    CJK_CHAR_RE,
    LETTERS_RE,
    bmp_patterns,
    cjk_character_terms,
    cjk_terms,
    fold_unit,
    fold_word,
    tokenize,
    unicode_terms,
)


class TextTerms:
    """The folded terms of a text (`tokenize`'s) found from its distinct words and CJK runs,
    not token by token: the set of them (`terms`: what MMR compares) and where the tokens
    with some terms are (`spans`: a snippet's highlights), without a `Token` for each word.

    A search does both for each chunk it shows, most of them translated pages: on the
    search bench's hits (tldr x3), both take 28 µs for a text of Cyrillic or Greek words
    against 72 µs through `tokenize`, 64 against 203 for Korean or Chinese (best of 15).
    """

    __slots__ = ("_runs", "_terms", "_words", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        # Each distinct word -> its term, each distinct CJK run -> its terms (bigrams in
        # order, or the one term of a single unit). None: `spans` tokenises the text.
        self._words: dict[str, str] | None = None
        self._runs: dict[str, list[str]] | None = None
        self._terms: frozenset[str] | None = None
        if text.isascii():
            return  # terms on first use: a snippet of ASCII text needs only its regex
        if ASTRAL_RE.search(text) is not None:
            self._terms = frozenset(unicode_terms(text))
            return
        bmp = bmp_patterns()
        if bmp.special.search(text) is None:
            # No mark, no CJK: a token is a longest run of letters and digits.
            self._words = _folded_words(set(LETTERS_RE.findall(text)))
            self._runs = {}
            self._terms = frozenset(self._words.values())
        elif bmp.continuation.search(text) is None:
            # No mark, no CJK continuation: a word is a longest run of letters and digits
            # that are not CJK, a CJK run a longest run of CJK characters, each its own
            # unit (`unicode_terms`'s `per_character`). A token is told from its
            # neighbours alone (`spans`).
            self._words = _folded_words(set(bmp.plain_word.findall(text)))
            runs = set(bmp.plain_run.findall(text))
            self._runs = {run: cjk_character_terms(run) for run in runs}
            terms = set(self._words.values())
            for run_terms in self._runs.values():
                terms.update(run_terms)
            self._terms = frozenset(terms)
        else:
            terms = set()
            for cjk, word in set(bmp.token.findall(text)):
                if word:
                    terms.add(fold_word(word))
                else:
                    terms.update(cjk_terms(cjk, bmp.cjk_unit))
            self._terms = frozenset(terms)

    @property
    def terms(self) -> frozenset[str]:
        """The set of folded terms of the text (`tokenize`'s)."""
        if self._terms is None:
            # As `tokenize`'s ASCII path; lowering the whole text first moves no offsets.
            self._terms = frozenset(ASCII_WORD_RE.findall(self.text.lower()))
        return self._terms

    def spans(self, terms: frozenset[str]) -> list[tuple[int, int]]:
        """Where the text has a token whose term is one of `terms`, in order: the spans of
        those tokens of `tokenize(text)`.

        ASCII text is searched for the terms alone (one regex pass). Text of letters, or of
        letters and CJK without marks, is searched for the words and runs whose terms are
        among `terms`, each occurrence kept when its neighbours cannot continue it (what
        makes it a token there). Other text (marks, code points beyond U+FFFF) is tokenised.
        """
        text = self.text
        if not terms:
            return []
        if text.isascii():
            pattern = _ascii_terms_re(terms)
            return [] if pattern is None else [m.span() for m in pattern.finditer(text.lower())]
        wanted = self.terms & terms
        if not wanted:
            return []
        if self._words is None or self._runs is None:
            return [(t.start, t.end) for t in tokenize(text) if t.term in wanted]
        found: list[tuple[int, int]] = []
        for word, term in self._words.items():
            if term in wanted:
                found.extend(_whole(text, word, _continues_word))
        for run, run_terms in self._runs.items():
            if wanted.isdisjoint(run_terms):
                continue
            for start, end in _whole(text, run, _continues_run):
                if end - start == 1:  # one unit: one token, not a bigram
                    found.append((start, end))
                else:
                    found.extend(
                        (start + k, start + k + 2)
                        for k, term in enumerate(run_terms)
                        if term in wanted
                    )
        # Tokens start at distinct offsets, in `tokenize`'s order.
        found.sort()
        return found


def _folded_words(words: set[str]) -> dict[str, str]:
    """Each word with its folded term (`fold_word`), the ASCII ones lowered at once."""
    ascii_words = list(filter(str.isascii, words))
    folded = dict(zip(ascii_words, map(str.lower, ascii_words), strict=True))
    others = words.difference(ascii_words)
    folded.update(zip(others, map(fold_unit, others), strict=True))
    return folded


def _whole(text: str, part: str, continues: Callable[[str], bool]) -> Iterator[tuple[int, int]]:
    """The spans where `part` stands in `text` with no neighbour that `continues` it."""
    size, length = len(part), len(text)
    start = text.find(part)
    while start >= 0:
        end = start + size
        if (start == 0 or not continues(text[start - 1])) and (
            end == length or not continues(text[end])
        ):
            yield start, end
        start = text.find(part, start + 1)


def _continues_word(char: str) -> bool:
    """Whether `char` is a word character (`[^\\W_]`, not CJK) in text without marks."""
    return char.isalnum() and CJK_CHAR_RE.match(char) is None


def _continues_run(char: str) -> bool:
    """Whether `char` is CJK: in text without marks or CJK continuations, each CJK
    character is a unit of its own, and a run of them one match."""
    return CJK_CHAR_RE.match(char) is not None


@lru_cache(maxsize=256)
def _ascii_terms_re(terms: frozenset[str]) -> re.Pattern[str] | None:
    """Whole ASCII words equal to one of `terms`, in lowered ASCII text (None: no term could
    be one)."""
    ascii_terms = sorted(t for t in terms if t.isascii() and ASCII_WORD_RE.fullmatch(t))
    if not ascii_terms:
        return None
    either = "|".join(re.escape(term) for term in ascii_terms)
    return re.compile(rf"(?<![a-z0-9])(?:{either})(?![a-z0-9])")


def term_spans(text: str, terms: frozenset[str]) -> list[tuple[int, int]]:
    """Where `text` has a token whose term is one of `terms`, in order: the spans of those
    tokens of `tokenize(text)` (`TextTerms.spans`)."""
    return TextTerms(text).spans(terms) if terms else []
