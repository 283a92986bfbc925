"""Dated notes (YYYY-MM-DD.md, YYYY-MM-DD-slug.md at any depth) versus evergreen files."""

from __future__ import annotations

import datetime as dt
import re

_DATED_NAME_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:-[^/\\]+)?\.(?:md|markdown)", re.ASCII | re.IGNORECASE
)


def date_from_path(rel_path: str) -> dt.date | None:
    """The date in a note's file name, when the name is a valid calendar date (+ slug)."""
    name = re.split(r"[/\\]", rel_path)[-1]
    match = _DATED_NAME_RE.fullmatch(name)
    if match is None:
        return None
    year, month, day = (int(part) for part in match.groups())
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None
