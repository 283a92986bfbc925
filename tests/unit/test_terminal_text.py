"""terminal_safe: control characters from notes become visible, one character for one."""

from __future__ import annotations

from apus.terminal_text import terminal_safe


def test_plain_text_is_unchanged() -> None:
    text = "Café — 東京 notes\twith a tab"
    assert terminal_safe(text) is text


def test_escape_sequences_become_visible() -> None:
    assert terminal_safe("a\x1b[2Jb") == "a\u241b[2Jb"
    assert terminal_safe("\x1b]0;title\x07") == "\u241b]0;title\u2407"
    assert terminal_safe("over\rwrite") == "over\u240dwrite"
    assert terminal_safe("del\x7f") == "del\u2421"


def test_c1_bidi_and_surrogates_are_replaced() -> None:
    assert terminal_safe("csi\x9b31m") == "csi\ufffd31m"
    assert terminal_safe("abc\u202edcba") == "abc\ufffddcba"
    assert terminal_safe("bad\udcff.md") == "bad\ufffd.md"


def test_newlines_only_when_asked_and_lengths_kept() -> None:
    text = "one\ntwo\x1b\tthree\x00"
    assert terminal_safe(text) == "one\u240atwo\u241b\tthree\u2400"
    assert terminal_safe(text, keep_newlines=True) == "one\ntwo\u241b\tthree\u2400"
    assert len(terminal_safe(text)) == len(text)
    safe = terminal_safe("".join(map(chr, range(0x00, 0xA0))) + "\ud800\u2066")
    assert all(c.isprintable() or c == "\t" for c in safe)
