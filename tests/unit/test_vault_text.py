"""Folding, tokenizing (words and CJK bigrams), token counts and snippet tokens."""

from __future__ import annotations

import unicodedata

import pytest

from apus.vault.text import (
    _COUNT_WINDOW,
    Token,
    _tenths,
    count_tokens,
    fold,
    tokenize,
)
from apus.vault.text_terms import TextTerms


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def terms(text: str) -> list[str]:
    return [token.term for token in tokenize(text)]


# --- fold -----------------------------------------------------------------------------------


def test_fold_nfc_and_nfd_spellings_meet() -> None:
    composed = "Café"
    decomposed = "Cafe\u0301"
    assert composed != decomposed
    assert fold(composed) == "cafe"
    assert fold(decomposed) == "cafe"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NAÏVE", "naive"),
        ("Straße", "strasse"),
        ("İstanbul", "istanbul"),
        ("Ångström", "angstrom"),
        ("ÉCOLE", "ecole"),
    ],
)
def test_fold_removes_case_and_accents(text: str, expected: str) -> None:
    assert fold(text) == expected
    assert fold(nfd(text)) == expected


def test_fold_keeps_kana_voicing_in_both_forms() -> None:
    # が and か are different words; NFD splits が into か + U+3099.
    assert fold("が") == "が"
    assert fold(nfd("が")) == "が"
    assert fold("が") != fold("か")


def test_fold_maps_compatibility_ideographs_to_unified_ones() -> None:
    assert fold("\uf900") == "\u8c48"


# --- tokenize: words ------------------------------------------------------------------------


def test_tokenize_mixed_nfc_and_nfd_in_one_string() -> None:
    text = "Café au lait, cafe\u0301 noir, CAFÉ crème"
    tokens = list(tokenize(text))
    assert [t.term for t in tokens] == [
        "cafe",
        "au",
        "lait",
        "cafe",
        "noir",
        "cafe",
        "creme",
    ]
    # The NFD word is one token that spans its combining mark.
    assert text[tokens[3].start : tokens[3].end] == "cafe\u0301"
    assert text[tokens[0].start : tokens[0].end] == "Café"


def test_tokenize_splits_on_underscore_and_hyphen_and_keeps_digits() -> None:
    assert terms("snake_case kebab-case v2 2025-03-01") == [
        "snake",
        "case",
        "kebab",
        "case",
        "v2",
        "2025",
        "03",
        "01",
    ]


def test_tokenize_empty_and_punctuation_only() -> None:
    assert terms("") == []
    assert terms("  ... --- !!! ") == []


def test_tokenize_returns_token_values() -> None:
    assert list(tokenize("Hi there")) == [Token("hi", 0, 2), Token("there", 3, 8)]


# --- tokenize: CJK --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("東京都", ["東京", "京都"]),  # Chinese characters (Japanese place name)
        ("我爱北京", ["我爱", "爱北", "北京"]),  # Simplified Chinese
        ("カタカナ", ["カタ", "タカ", "カナ"]),  # Katakana
        ("ひらがな", ["ひら", "らが", "がな"]),  # Hiragana
        ("한국어", ["한국", "국어"]),  # Hangul
        ("東", ["東"]),  # a lone character is a unigram
    ],
)
def test_tokenize_cjk_bigrams(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_tokenize_cjk_partial_query_is_found_in_longer_text() -> None:
    document = set(terms("私は東京都に住んでいます"))
    assert set(terms("京都")) <= document
    assert set(terms("東京都")) <= document
    assert set(terms("大阪")).isdisjoint(document)


def test_tokenize_cjk_nfd_spellings_give_the_same_bigrams() -> None:
    for text in ("한국어 문장", "がぎぐ", "パン"):
        assert nfd(text) != text
        assert terms(nfd(text)) == terms(text)


def test_tokenize_cjk_extension_compatibility_and_halfwidth_ranges() -> None:
    assert terms("\u3400\u3401") == ["\u3400\u3401"]  # CJK Extension A
    assert terms("\U00020000\U00020001") == ["\U00020000\U00020001"]  # Extension B
    # Compatibility ideographs fold to the unified ones, so both spellings match.
    assert terms("\uf900\uf901") == terms("\u8c48\u66f4")
    assert terms("ｶﾀｶﾅ") == ["ｶﾀ", "ﾀｶ", "ｶﾅ"]  # halfwidth Katakana
    assert terms("ｶﾞｽ") == ["ｶﾞｽ"]  # the halfwidth voicing mark stays on its kana


def test_tokenize_mixed_latin_and_cjk() -> None:
    assert terms("hello東京world") == ["hello", "東京", "world"]
    assert terms("Apusは検索アプリ") == ["apus", "は検", "検索", "索ア", "アプ", "プリ"]


def test_tokenize_offsets_map_back_to_the_original_text() -> None:
    text = "Notes: Cafe\u0301 → 東京都で会議。 한국어 NAÏVE_x ｶﾞｽ \U00020000\U00020001 ok"
    tokens = list(tokenize(text))
    assert tokens
    previous_start = -1
    for token in tokens:
        assert 0 <= token.start < token.end <= len(text)
        assert token.start > previous_start
        previous_start = token.start
        # Folding the original slice gives the term, for words and bigrams alike.
        assert fold(text[token.start : token.end]) == token.term


# --- count_tokens ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("   \n\t", 0),
        ("alpha", 2),  # 1.3 rounds up
        ("alpha beta gamma", 4),  # 3.9
        ("alpha beta gamma delta epsilon zeta eta theta iota kappa", 13),  # 13.0
        ("Hello, world!", 5),  # 2 words (2.6) + 2 punctuation runs
        ("a -- b", 4),  # 2.6 + 1
        ("東京都に行く", 6),  # one per CJK character
        ("東京 and 京都", 6),  # 4 + 1.3
        ("x" * 13, 3),  # a long word: 1.3 + 1 per 12 further characters
        ("x" * 25, 4),  # 1.3 + 2
    ],
)
def test_count_tokens_examples(text: str, expected: int) -> None:
    assert count_tokens(text) == expected


def test_count_tokens_nfd_costs_what_nfc_costs() -> None:
    for text in ("Café crème brûlée", "한국어 문장입니다", "がぎぐげご"):
        assert count_tokens(nfd(text)) == count_tokens(text)


def test_count_tokens_cjk_only_text_is_one_per_character() -> None:
    text = "日本語の文章を検索する한국어문장"
    assert count_tokens(text) == len(text)


def test_count_tokens_of_text_is_at_most_the_sum_of_its_lines() -> None:
    text = "alpha beta\nHello, world!\n東京都 ok\nx\n" + "y" * 40 + "\n-- snake_case --"
    lines = text.split("\n")
    assert count_tokens(text) <= sum(count_tokens(line) for line in lines)


def test_count_tokens_grows_with_a_huge_word() -> None:
    # Base64 or minified ids must not look cheap: they get split by real tokenizers.
    assert count_tokens("A" * 1200) >= 100


# --- TextTerms.terms -------------------------------------------------------------------------


def test_text_terms_are_folded_terms() -> None:
    assert TextTerms("Café cafe\u0301 CAFE bar").terms == frozenset({"cafe", "bar"})
    assert TextTerms("東京都").terms == frozenset({"東京", "京都"})
    assert TextTerms("").terms == frozenset()


def test_query_terms_drop_function_words_but_never_everything() -> None:
    from apus.vault.text import query_terms

    assert query_terms("Where do I keep the WiFi password?") == ["keep", "wifi", "password"]
    assert query_terms("the who") == ["the", "who"]  # only function words: keep them
    assert query_terms("café Café") == ["cafe"]


# --- keyword_term -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("forms", "stem"),
    [
        (("study", "studies", "studied"), "studi"),
        (("run", "running", "runs"), "run"),
        (("protein", "proteins"), "protein"),
        (("connection", "connections", "connected"), "connect"),
    ],
)
def test_keyword_term_meets_english_word_forms(forms: tuple[str, ...], stem: str) -> None:
    from apus.vault.text import keyword_term

    assert {keyword_term(form) for form in forms} == {stem}


@pytest.mark.parametrize("term", ["4821", "k3s", "ipv6", "v2", "東京", "한국", "ж", "ελλάδα"])
def test_keyword_term_leaves_identifiers_and_other_scripts_alone(term: str) -> None:
    from apus.vault.text import keyword_term

    assert keyword_term(term) == term


def test_keyword_terms_of_nfc_and_nfd_spellings_are_equal() -> None:
    from apus.vault.text import keyword_term

    for word in ("Crèmes", "Café", "naïvely", "Ōsaka"):
        nfc = [keyword_term(t) for t in terms(unicodedata.normalize("NFC", word))]
        assert [keyword_term(t) for t in terms(nfd(word))] == nfc, word
    assert [keyword_term(t) for t in terms("JIRA-4821 gateway-host")] == [
        "jira",
        "4821",
        "gateway",
        "host",
    ]


def test_a_huge_text_is_counted_in_windows_to_the_same_count() -> None:
    # Longer than one counting window, so the windowed path runs; whatever is at the cuts
    # (a word, CJK, a combining mark after a space, no whitespace at all) the count is the
    # one a single pass over the whole text gives.
    texts = [
        "alder birch,cedar " * (_COUNT_WINDOW // 6),
        "東京 タワー 서울 the_tower e\u0301te\u0301 " * (_COUNT_WINDOW // 10),
        "x" * (_COUNT_WINDOW * 2),
        ("a" * 11 + " ") * (_COUNT_WINDOW // 5) + "\u00a0\u3000 " * 1000,
    ]
    for text in texts:
        assert len(text) > _COUNT_WINDOW
        assert count_tokens(text) == -(-_tenths(text) // 10)
