"""A snippet held to a number of display columns (an agent's answer): a CJK character
counts two, the window kept holds the most highlights, and each kept highlight still marks
the same words."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from apus.search.snippet import Snippet, display_columns, within_columns


def _width(text: str) -> int:
    return sum(display_columns(char) for char in text)


def test_a_short_snippet_is_kept_whole() -> None:
    snippet = Snippet("The kestrel hovers.", ((4, 11),))
    assert within_columns(snippet, 150) is snippet


def test_cjk_counts_two_columns_and_the_match_is_kept() -> None:
    text = "使用 xz 压缩文件：" * 6 + "解压 XZ 文件：`xz -d 文件.xz`" + "使用 lzma 压缩文件。" * 6
    at = text.index("解压")
    cut = within_columns(Snippet(text, ((at, at + 2),)), 60)
    assert _width(cut.text) <= 60
    ((start, end),) = cut.highlights
    assert cut.text[start:end] == "解压"
    assert cut.text.startswith("…") and cut.text.endswith("…")


def test_english_is_cut_at_words_around_the_best_highlights() -> None:
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
        "nu",
        "xi",
    ]
    text = " ".join(words * 6)
    spans = tuple((i, i + 5) for i in range(len(text)) if text.startswith("kappa", i))
    cut = within_columns(Snippet(text, spans), 80)
    assert len(cut.text) <= 80
    body = cut.text.strip("…")
    assert body in text and body.split()[0] in words and body.split()[-1] in words
    assert cut.highlights and all(cut.text[s:e] == "kappa" for s, e in cut.highlights)


texts = st.text(
    alphabet=st.sampled_from(list("abc xyz 文件压缩アーカイブ파일 …-`")), min_size=1, max_size=400
)


@given(texts, st.integers(20, 200), st.data())
def test_any_snippet_fits_and_keeps_its_words(text: str, columns: int, data: st.DataObject) -> None:
    starts = data.draw(st.lists(st.integers(0, len(text) - 1), max_size=5, unique=True))
    spans = tuple(sorted((s, min(len(text), s + 2)) for s in starts))
    spans = tuple(span for i, span in enumerate(spans) if i == 0 or span[0] >= spans[i - 1][1])
    cut = within_columns(Snippet(text, spans), columns)
    assert _width(cut.text) <= max(columns, _width(text) if _width(text) <= columns else 0)
    marked = {text[s:e] for s, e in spans}
    for start, end in cut.highlights:
        assert cut.text[start:end] in marked
