"""Unicode folding (NFC/NFD, case, accents), CJK bigrams, English stems, token counts and
snippet tokens."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import pairwise
from typing import TYPE_CHECKING, NamedTuple

from whoosh.lang.porter2 import stem as _porter2

from apus.vault import marks_table

# `TextTerms` has a module of its own (`apus.vault.text_terms`), which imports this one: it is
# found here too, on first use, for the modules that still name it here. Type checkers see the
# name alone, so any other name missing here is still an error to them.
if TYPE_CHECKING:
    from apus.vault.text_terms import TextTerms as TextTerms
else:

    def __getattr__(name: str) -> object:
        if name == "TextTerms":
            from apus.vault.text_terms import TextTerms

            return TextTerms
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Bump when analysis changes: a keyword index made with another version is rebuilt.
# 2: keyword terms are English stems (`keyword_term`).
ANALYZER_VERSION = 2

# Kana voicing marks (dakuten, handakuten) are Mn after NFD, but dropping them would make
# different words equal (が -> か), so folding keeps them; NFC puts them back on the kana.
_KEPT_MARKS = frozenset("\u3099\u309a")


def _class_body(code_points: list[int]) -> str:
    """A regex class body (ranges) matching exactly the sorted `code_points`."""
    ranges: list[list[int]] = []
    for cp in code_points:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in ranges)


@cache
def _mark_classes() -> tuple[str, str]:
    """Class bodies for the nonspacing marks that folding drops, and for all marks (built
    on the first non-ASCII text)."""
    if unicodedata.unidata_version == marks_table.UNIDATA_VERSION:
        return marks_table.DROPPED, marks_table.MARKS
    return _scan_marks()


def _scan_marks() -> tuple[str, str]:
    """`_mark_classes` from Python's Unicode database.

    `re` has no \\p{M}; marks live only in planes 0, 1 and 14, so scanning those is enough.
    """
    dropped: list[int] = []
    marks: list[int] = []
    for block in (range(0x20000), range(0xE0000, 0xE1000)):
        for cp in block:
            category = unicodedata.category(chr(cp))
            if category[0] != "M":
                continue
            marks.append(cp)
            if category == "Mn" and chr(cp) not in _KEPT_MARKS:
                dropped.append(cp)
    return _class_body(dropped), _class_body(marks)


@cache
def _dropped_marks_re() -> re.Pattern[str]:
    return re.compile(f"[{_mark_classes()[0]}]+")


_HAN = (
    "\u3005-\u3007"  # 々 〆 〇
    "\u3400-\u4dbf"  # Extension A
    "\u4e00-\u9fff"
    "\uf900-\ufaff"  # compatibility ideographs
    "\U00020000-\U0002a6df"  # Extension B
    "\U0002a700-\U0002ebef"  # Extensions C-F
    "\U0002f800-\U0002fa1f"  # compatibility supplement
    "\U00030000-\U000323af"  # Extensions G-H
)
_KANA = (
    "\u3041-\u3098\u309b-\u309f"  # Hiragana, less the combining voicing marks
    "\u30a0-\u30ff"  # Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\U0001b000-\U0001b16f"  # Kana supplement and extension A
    "\uff66-\uff9f"  # halfwidth Katakana
)
_HANGUL = (
    "\u1100-\u11ff"  # Jamo
    "\u3130-\u318f"  # compatibility Jamo
    "\ua960-\ua97f"  # Jamo extension A
    "\uac00-\ud7ff"  # syllables and Jamo extension B
    "\uffa0-\uffdc"  # halfwidth Hangul
)
# Vowel and final Jamo of decomposed (NFD) Hangul continue a syllable rather than start one.
_HANGUL_CONT = "\u1160-\u11ff\ud7b0-\ud7ff"
_CJK = f"{_HAN}{_KANA}{_HANGUL}"
# A word starts with a letter or digit (never `_`, never CJK) and keeps the combining marks
# inside it, so a decomposed (NFD) word is one token.
_WORD_CHAR = rf"[^\W_{_CJK}]"


@cache
def _cjk_unit() -> str:
    """One CJK character as a reader sees it, so NFC and NFD spellings give the same units.

    What continues a CJK character rather than starting one: NFD Hangul Jamo, combining
    marks such as NFD kana voicing, halfwidth voicing marks.
    """
    return f"[{_CJK}][{_HANGUL_CONT}{_mark_classes()[1]}\uff9e\uff9f]*"


@cache
def _token_re() -> re.Pattern[str]:
    word = rf"{_WORD_CHAR}+(?:[{_mark_classes()[1]}]+{_WORD_CHAR}*)*"
    return re.compile(rf"(?P<cjk>(?:{_cjk_unit()})+)|(?P<word>{word})")


@cache
def _cjk_unit_re() -> re.Pattern[str]:
    return re.compile(_cjk_unit())


ASCII_WORD_RE = re.compile(r"[A-Za-z0-9]+")
# Words longer than this many characters cost one more token per further block of it.
_LONG_WORD_BLOCK = 12


def fold(text: str) -> str:
    """Case- and accent-fold `text`; NFC and NFD spellings of a word fold to the same string."""
    if text.isascii():
        # ASCII has no marks and no other normal form, and casefold() is lower() on it.
        return text.lower()
    return _fold_unicode(text)


def _fold_unicode(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text).casefold()
    # casefold can itself produce decomposable text, so marks are dropped after it.
    return unicodedata.normalize("NFC", _dropped_marks_re().sub("", decomposed))


@lru_cache(maxsize=65_536)
def fold_unit(unit: str) -> str:
    return fold(unit)


def fold_word(word: str) -> str:
    # Plain ASCII words are the bulk of most notes; lower() equals fold() for them. Other
    # words recur as ASCII ones do, and folding one normalises it twice: kept.
    return word.lower() if word.isascii() else fold_unit(word)


class Token(NamedTuple):
    """A named tuple, not a frozen dataclass: made in 0.25 µs, not 0.48 µs (timeit; a
    search makes one for each word of a query, a path and a recalled chunk)."""

    term: str  # folded term as indexed/queried
    start: int  # char offsets into the ORIGINAL string (for highlighting)
    end: int


def _cjk_tokens(text: str, start: int, end: int, unit_re: re.Pattern[str]) -> Iterator[Token]:
    units = [m.span() for m in unit_re.finditer(text, start, end)]
    if len(units) == 1:
        yield Token(fold_unit(text[start:end]), start, end)
        return
    terms = [fold_unit(text[s:e]) for s, e in units]
    for i in range(len(units) - 1):
        yield Token(terms[i] + terms[i + 1], units[i][0], units[i + 1][1])


def tokenize(text: str) -> Iterator[Token]:
    """Folded words and CJK character bigrams, with offsets into `text`.

    Used for both indexing and queries: a query of two CJK characters is one bigram, which
    every longer text containing them also yields, so partial CJK queries match.
    """
    if text.isascii():
        # The same tokens as below (no CJK, no marks; `[^\W_]` is `[A-Za-z0-9]` on ASCII)
        # without building the Unicode patterns.
        for match in ASCII_WORD_RE.finditer(text):
            yield Token(match.group().lower(), *match.span())
    elif ASTRAL_RE.search(text) is None:
        # The patterns cut to U+FFFF, as `unicode_terms` uses them: 20 µs against 27 µs
        # for a translated tldr page with marks (Lao, Devanagari; 190 characters).
        bmp = bmp_patterns()
        yield from _tokenize_unicode(text, bmp.token, bmp.cjk_unit)
    else:
        yield from _tokenize_unicode(text)


def _tokenize_unicode(
    text: str, token_re: re.Pattern[str] | None = None, unit_re: re.Pattern[str] | None = None
) -> Iterator[Token]:
    """`tokenize`'s tokens of non-ASCII text; by the full patterns unless others are given."""
    token_re = token_re or _token_re()
    unit_re = unit_re or _cjk_unit_re()
    for match in token_re.finditer(text):
        start, end = match.span()
        if match.lastgroup == "cjk":
            yield from _cjk_tokens(text, start, end, unit_re)
        else:
            yield Token(fold_word(match.group()), start, end)


# Texts longer than this are counted in windows of about this many characters.
_COUNT_WINDOW = 1 << 20
_SPACE_RE = re.compile(r"\s")


def count_tokens(text: str) -> int:
    """Approximate how many model tokens `text` costs, erring high.

    A CJK character is about one token. A word costs 1.3, because subword tokenizers split
    longer or rarer words into pieces (English averages about 1.3 pieces per word), and a
    very long word (ids, base64, URLs) one more per 12 characters so it cannot hide a huge
    line. A run of punctuation costs 1. The count of a text is at most the sum of the counts
    of its lines, so budgets checked line by line hold for the joined text.
    """
    return tokens_of(count_tenths(text))


def tokens_of(tenths: int) -> int:
    """The token count (`count_tokens`) of a text that costs `tenths` (`count_tenths`)."""
    return -(-tenths // 10)


def count_tenths(text: str) -> int:
    """Ten times `count_tokens(text)` before rounding up. Exactly additive over lines: no
    word, punctuation run or CJK character spans a line break, and NFC never composes
    across one, so `count_tenths(a + "\n" + b) == count_tenths(a) + count_tenths(b)` and a
    text joined from lines costs the sum of its lines' tenths, rounded up once."""
    if not text:
        return 0
    if len(text) <= _COUNT_WINDOW:
        return _tenths(text)
    # A huge text (a note of one 300 MB line) is counted window by window, each cut just
    # before a whitespace character: no word, punctuation run, long word or CJK run spans
    # one, so the sum is exact, and each pass never allocates more than a window's worth.
    total, start = 0, 0
    while start < len(text):
        end = start + _COUNT_WINDOW
        if end < len(text):
            space = _SPACE_RE.search(text, end)
            end = space.start() if space is not None else len(text)
        total += _tenths(text[start:end])
        start = end
    return total


# Each character as its class for counting: a letter or digit ("a": `[^\W_]`, the word
# characters of `re` less `_`), whitespace (" ": `\s`), CJK ("c", one token each, and a
# break between words as whitespace is) or anything else ("p": punctuation, `_`, marks).
# Counting then needs no pattern over the text itself: runs start where the class changes,
# which `str.count` finds at C speed (2-2.5x faster than three regex passes over the text).
_ASCII_CLASSES = str.maketrans(
    {
        code: "a" if chr(code).isalnum() else " " if chr(code).isspace() else "p"
        for code in range(128)
    }
)
CJK_CHAR_RE = re.compile(f"[{_CJK}]")
# A run of 13 or more letters and digits: a long word, one more token per further 12.
_LONG_RUN = "a" * (_LONG_WORD_BLOCK + 1)
_LONG_RUN_RE = re.compile(f"a{{{_LONG_WORD_BLOCK + 1},}}")
# Classes of the non-ASCII characters met so far; forgotten past this many (a text made of
# every code point must not grow it without bound; real notes use a few thousand).
_UNICODE_CLASSES_MAX = 1 << 16


class _UnicodeClasses(dict[int, str]):
    """`str.translate`'s table for any text: each code point's class, found on first use."""

    def __missing__(self, code: int) -> str:
        if len(self) >= _UNICODE_CLASSES_MAX:
            self.clear()
        char = chr(code)
        if CJK_CHAR_RE.match(char):
            found = "c"
        elif char.isalnum():  # what `re`'s \w is, less `_`
            found = "a"
        elif char.isspace():  # what `re`'s \s is
            found = " "
        else:
            found = "p"
        self[code] = found
        return found


_UNICODE_CLASSES = _UnicodeClasses()


def _tenths(text: str) -> int:
    """Ten times the token count of `text`, before rounding up."""
    if text.isascii():
        classes = " " + text.translate(_ASCII_CLASSES)
        cjk = 0
    else:
        # NFD text then costs what its NFC spelling costs. Marks that survive NFC (Thai,
        # Devanagari) split words below, which overcounts: the safe direction for a budget.
        if not unicodedata.is_normalized("NFC", text):
            text = unicodedata.normalize("NFC", text)
        classes = " " + text.translate(_UNICODE_CLASSES)
        cjk = classes.count("c")
    # A word starts after a space, punctuation or CJK; so does a punctuation run.
    words = classes.count(" a") + classes.count("pa") + (classes.count("ca") if cjk else 0)
    punct = classes.count(" p") + classes.count("ap") + (classes.count("cp") if cjk else 0)
    tenths = 10 * cjk + 13 * words + 10 * punct
    if _LONG_RUN in classes:
        for match in _LONG_RUN_RE.finditer(classes):
            tenths += 10 * ((match.end() - match.start() - 1) // _LONG_WORD_BLOCK)
    return tenths


# Function words a query carries but a note's relevance does not: "where do I keep the wifi
# password" should match on wifi and password, not on every note that says "I" and "the".
# Only queries are filtered (the index keeps every word), so this needs no index rebuild.
QUERY_STOP_WORDS = frozenset(
    """a about after all also am an and any are as at be been but by can could did do does
    doing for from had has have having he her here hers him his how i if in into is it its
    just me my myself no nor not of on or our ours out over she should so some than that the
    their theirs them then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours""".split()  # noqa: SIM905
)


# Only words of plain letters are stemmed: words with digits (`4821`, `k3s`, `ipv6`) are
# identifiers, and the stemmer knows English only (folding has already made `café` plain).
_STEMMABLE_RE = re.compile(r"[a-z]+")


def keyword_term(term: str) -> str:
    """The term the keyword index stores for a folded term: its English (Porter2) stem.

    `studies` and `study`, `running` and `run` meet; CJK bigrams, words with digits and
    words in other scripts stay as they are. Measured on SciFact train (809 queries), stems
    lift keyword nDCG@10 from 0.672 to 0.704 (odd and even query halves alike); a
    plural-only stemmer gained about half as much, and leaving the parts of hyphenated
    words unstemmed (as identifiers) about 60%.
    """
    return _porter2(term) if _STEMMABLE_RE.fullmatch(term) else term


def keyword_terms(text: str) -> list[str]:
    """The terms the keyword index stores for `text`, in order: `keyword_term` of each token."""
    if text.isascii():
        # As `tokenize`'s ASCII path; lowering the whole text first moves no offsets.
        return _stems(ASCII_WORD_RE.findall(text.lower()))
    return _stems(unicode_terms(text))


# Stems of the folded terms met so far (looked up in a dict: most terms of a text recur);
# forgotten past this many, so a vault of unique ids cannot grow it unbounded. A full table
# is replaced, not cleared: a sync and a search stem at once, each with the table it began.
_STEMS: dict[str, str] = {}
_STEMS_MAX = 1 << 18


def _stems(terms: list[str]) -> list[str]:
    global _STEMS
    stems = _STEMS
    missing = set(terms).difference(stems)
    if missing:
        if len(stems) + len(missing) > _STEMS_MAX:
            stems = _STEMS = {}
            missing = set(terms)
        for term in missing:
            stems[term] = _porter2(term) if _STEMMABLE_RE.fullmatch(term) else term
    return list(map(stems.__getitem__, terms))


def unicode_terms(text: str) -> list[str]:
    """The terms of `_tokenize_unicode`, without making a `Token` for every word (that was
    most of the cost of analysing a note with one non-ASCII character).

    Python's `re` tests a character against a class holding code points beyond U+FFFF
    range by range (the mark class has hundreds), and against one within it in one step:
    a text without such code points (nearly every note) is matched with the same classes
    cut to U+FFFF, and one without marks or CJK as well needs only letters and digits.
    """
    per_character = False
    if ASTRAL_RE.search(text) is not None:
        token_re, unit_re = _token_re(), _cjk_unit_re()
    else:
        bmp = bmp_patterns()
        if bmp.special.search(text) is None:
            return [fold_word(word) for word in LETTERS_RE.findall(text)]
        token_re, unit_re = bmp.token, bmp.cjk_unit
        # Nothing continues a CJK character: each is a unit of its own.
        per_character = bmp.continuation.search(text) is None
    terms: list[str] = []
    for cjk, word in token_re.findall(text):
        if word:
            terms.append(fold_word(word))
        elif per_character:
            terms.extend(cjk_character_terms(cjk))
        else:
            terms.extend(cjk_terms(cjk, unit_re))
    return terms


def cjk_terms(run: str, unit_re: re.Pattern[str]) -> list[str]:
    """The terms of `_cjk_tokens` for one run of CJK characters."""
    units = unit_re.findall(run)
    if len(units) == 1:
        return [fold_unit(run)]
    folded = [fold_unit(unit) for unit in units]
    return [first + second for first, second in pairwise(folded)]


def cjk_character_terms(run: str) -> list[str]:
    """`cjk_terms` of a run whose units are its characters: each folded through a table
    (a CJK character folds to one character; if one does not, unit by unit as there)."""
    folded = run.translate(_CJK_FOLDS)
    if len(folded) != len(run):  # none folds to nothing, so one folded to several
        return cjk_terms(run, _cjk_unit_re())
    if len(folded) == 1:
        return [folded]
    return [first + second for first, second in pairwise(folded)]


class _CharacterFolds(dict[int, str]):
    """`str.translate`'s table folding each character (`fold`), found on first use."""

    def __missing__(self, code: int) -> str:
        if len(self) >= _CHARACTER_FOLDS_MAX:
            self.clear()
        found = self[code] = fold(chr(code))
        return found


# CJK characters met so far; forgotten past this many (the CJK ranges hold about 100k).
_CHARACTER_FOLDS_MAX = 1 << 17
_CJK_FOLDS = _CharacterFolds()


# A word of a text without marks or CJK: what `_token_re`'s words are there.
LETTERS_RE = re.compile(r"[^\W_]+")
# A code point beyond U+FFFF: a search, not `max(text) > "\uffff"` (1.9 µs against 7.7 µs
# on a translated tldr page of 400 characters).
ASTRAL_RE = re.compile("[\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class BmpPatterns:
    token: re.Pattern[str]  # `_token_re()` for text within U+FFFF
    cjk_unit: re.Pattern[str]  # `_cjk_unit_re()` for text within U+FFFF
    special: re.Pattern[str]  # any mark or CJK character within U+FFFF
    continuation: re.Pattern[str]  # what continues a CJK character in a unit
    # In text without marks or continuations, `token`'s two kinds of match on their own:
    # a run of CJK characters, a run of word characters (two passes: 18 µs against 29 µs
    # for one through `token` on the search bench's Korean and Chinese hits).
    plain_run: re.Pattern[str]
    plain_word: re.Pattern[str]


@cache
def bmp_patterns() -> BmpPatterns:
    marks = _within_bmp(_mark_classes()[1])
    cjk = _within_bmp(_CJK)
    continuation = f"[{_within_bmp(_HANGUL_CONT)}{marks}\uff9e\uff9f]"
    unit = f"[{cjk}]{continuation}*"
    word_char = rf"[^\W_{cjk}]"
    word = rf"{word_char}+(?:[{marks}]+{word_char}*)*"
    return BmpPatterns(
        token=re.compile(rf"(?P<cjk>(?:{unit})+)|(?P<word>{word})"),
        cjk_unit=re.compile(unit),
        special=re.compile(f"[{marks}{cjk}]"),
        continuation=re.compile(continuation),
        plain_run=re.compile(f"[{cjk}]+"),
        plain_word=re.compile(f"{word_char}+"),
    )


def _within_bmp(body: str) -> str:
    """A class body of ranges (`lo-hi`, each end a character or an escaped one) cut to the
    code points up to U+FFFF."""
    ends = _CLASS_END_RE.findall(body)
    pairs = list(zip(ends[::2], ends[1::2], strict=True))
    if body != "".join(f"{lo}-{hi}" for lo, hi in pairs):
        raise ValueError("not a class body of ranges")
    return "".join(
        f"{re.escape(lo[-1])}-{re.escape(min(hi[-1], chr(0xFFFF)))}"
        for lo, hi in pairs
        if lo[-1] <= "\uffff"
    )


# One end of a range in a class body: an escaped character or any other but `-`.
_CLASS_END_RE = re.compile(r"\\.|[^-]", re.DOTALL)


def query_terms(query: str) -> list[str]:
    """The distinct folded terms of a query, without function words unless that leaves none."""
    terms = list(dict.fromkeys(token.term for token in tokenize(query)))
    content = [term for term in terms if term not in QUERY_STOP_WORDS]
    return content or terms
