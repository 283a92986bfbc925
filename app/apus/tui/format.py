"""Small text formatting for the UI: counts, sizes, durations, dates and flattened snippets."""

from __future__ import annotations

import datetime as dt
from pathlib import Path


def plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


def size_text(num_bytes: int) -> str:
    value = float(num_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def eta_text(seconds: float | None) -> str:
    """'about 3 min left' style; empty when unknown."""
    if seconds is None:
        return ""
    if seconds < 1:
        return "almost done"
    if seconds < 60:
        return f"{seconds:.0f} s left"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min left"
    return f"{seconds / 3600:.1f} h left"


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
    """Collapse whitespace runs (newlines included) to one space and cut at `limit` chars.

    Highlight spans move with the text; a span the cut runs through is clipped.
    """
    out: list[str] = []
    offsets: list[int] = []  # offsets[i]: where original char i lands in `out`
    for char in text:
        offsets.append(len(out))
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
