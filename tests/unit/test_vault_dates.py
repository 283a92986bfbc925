"""Dated note names versus evergreen files."""

from __future__ import annotations

import datetime as dt

import pytest

from apus.vault.dates import date_from_path


def is_evergreen(rel_path: str) -> bool:
    """Ranking treats a note without a date in its name as evergreen (no decay)."""
    return date_from_path(rel_path) is None


@pytest.mark.parametrize(
    ("rel_path", "expected"),
    [
        ("2025-03-04.md", dt.date(2025, 3, 4)),
        ("memory/2025-03-04.md", dt.date(2025, 3, 4)),
        ("a/b/c/2024-12-31.markdown", dt.date(2024, 12, 31)),
        ("journal/2024-02-29-standup-notes.md", dt.date(2024, 2, 29)),  # leap day
        ("2025-01-01-x.md", dt.date(2025, 1, 1)),
        ("notes/2025-01-01.MD", dt.date(2025, 1, 1)),
        ("../shared/2025-06-30-retro.md", dt.date(2025, 6, 30)),
    ],
)
def test_dated_names(rel_path: str, expected: dt.date) -> None:
    assert date_from_path(rel_path) == expected
    assert not is_evergreen(rel_path)


@pytest.mark.parametrize(
    "rel_path",
    [
        "MEMORY.md",
        "USER.md",
        "notes/project.md",
        "2025-02-30.md",  # no such day
        "2023-02-29.md",  # not a leap year
        "2025-13-01.md",
        "2025-00-10.md",
        "2025-1-5.md",
        "20250105.md",
        "2025-01-05.txt",
        "2025-01-05-.md",  # empty slug
        "2025-01-05_slug.md",
        "x2025-01-05.md",
        "2025-01-05/notes.md",  # a dated folder does not date the note
        "2025-01-05-slug.md/inner.md",
        "",
    ],
)
def test_undated_or_invalid_names_are_evergreen(rel_path: str) -> None:
    assert date_from_path(rel_path) is None
    assert is_evergreen(rel_path)
