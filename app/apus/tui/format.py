"""Small text formatting for the UI: counts, sizes, durations, dates and flattened snippets."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from apus.units import human_duration

# A heading, list or quote marker. Snippets arrive with their newlines already collapsed, so
# any such marker standing alone between spaces counts (a spaced dash reads fine as "·").
_LINE_MARKER = re.compile(r"(?:^|(?<=\s))(?:#{1,6}|[-*+>])[ \t\n]+")


def plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


def eta_text(seconds: float | None) -> str:
    """'about 3 min left' style; empty when unknown."""
    if seconds is None:
        return ""
    if seconds < 1:
        return "almost done"
    return f"{human_duration(seconds)} left"


def home_relative(path: Path | str) -> str:
    """A path with the home folder written as ~, as people type it."""
    text = str(path)
    home = str(Path.home())
    if home not in ("", "/") and (text == home or text.startswith(home + "/")):
        return "~" + text[len(home) :]
    return text


def day_label(day: dt.date) -> str:
    return day.strftime("%a %d %b %Y")


def flatten_snippet(
    text: str, highlights: tuple[tuple[int, int], ...], limit: int
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """One line of plain text from a Markdown snippet, cut at `limit` chars.

    Whitespace runs (newlines included) become one space; heading, list and quote markers
    become a " · " separator. Highlight spans move with the text; a span the
    cut runs through is clipped.
    """
    markers: dict[int, int] = {match.start(): match.end() for match in _LINE_MARKER.finditer(text)}
    out: list[str] = []
    offsets: list[int] = []  # offsets[i]: where original char i lands in `out`
    skip_until = 0
    for index, char in enumerate(text):
        if index in markers:
            skip_until = markers[index]
            while out and out[-1] == " ":
                out.pop()
            if out:
                out.extend(" · ")
        offsets.append(len(out))
        if index < skip_until:
            continue
        if not char.isspace():
            out.append(char)
        elif out and out[-1] != " ":
            out.append(" ")
    offsets.append(len(out))
    while out and out[-1] == " ":
        out.pop()
    flat = "".join(out)
    visible = len(flat)
    if len(flat) > limit:
        flat = flat[: max(0, limit - 1)].rstrip() + "…"
        visible = len(flat) - 1
    spans: list[tuple[int, int]] = []
    for start, end in highlights:
        new_start = offsets[min(start, len(text))]
        new_end = min(offsets[min(end, len(text))], visible)
        if new_start < new_end:
            spans.append((new_start, new_end))
    return flat, tuple(spans)
