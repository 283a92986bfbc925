"""Per-entry annotations: `<!-- importance: 8 -->` and `<!-- triggers: a; b -->` written on
an entry of a note, in a form people read and edit like the rest of the note.

Frontmatter speaks for a whole note; these speak for the passage they stand in (the chunk
that holds them), so one entry of a daily note can matter more than its neighbours.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

_ANNOTATION = re.compile(r"<!--\s*(importance|triggers)\s*:\s*(.*?)\s*-->", re.IGNORECASE)
TRIGGER_SEPARATOR = ";"
IMPORTANCE_RANGE = (1, 10)


@dataclass(frozen=True)
class EntryAnnotations:
    importance: float | None  # the highest valid one in the passage, else None
    triggers: tuple[str, ...]


def annotations_in(text: str) -> EntryAnnotations:
    """The annotations of a passage; a malformed value is ignored, not guessed at."""
    if "<!--" not in text:  # most passages: no regex work
        return EntryAnnotations(None, ())
    importance: float | None = None
    triggers: list[str] = []
    for match in _ANNOTATION.finditer(text):
        kind, value = match.group(1).lower(), match.group(2)
        if kind == "importance":
            number = _importance(value)
            if number is not None and (importance is None or number > importance):
                importance = number
        else:
            triggers += [t.strip() for t in value.split(TRIGGER_SEPARATOR) if t.strip()]
    return EntryAnnotations(importance, tuple(dict.fromkeys(triggers)))


def without_annotations(text: str) -> str:
    """The passage as a reader wants it in a snippet: annotations carry no content."""
    return _ANNOTATION.sub("", text) if "<!--" in text else text


def _importance(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    low, high = IMPORTANCE_RANGE
    return number if math.isfinite(number) and low <= number <= high else None


def annotation_lines(importance: int | None, triggers: Sequence[str]) -> list[str]:
    """The lines that carry an entry's annotations (none when it has none)."""
    lines = []
    if importance is not None:
        lines.append(f"<!-- importance: {importance} -->")
    if triggers:
        lines.append(f"<!-- triggers: {f'{TRIGGER_SEPARATOR} '.join(triggers)} -->")
    return lines


def entry_span(text: str, trigger: str) -> tuple[int, int] | None:
    """The lines (0-based, inclusive) of the entry in `text` whose annotation names
    `trigger`: from the heading above the annotation (else the first line) to the line
    before the next heading (else the last), blank lines at its end left out. None when no
    annotation in `text` names it.

    A passage may hold several entries (a chunk of MEMORY.md holds as many as fit); a
    trigger speaks for its own entry, so recall cites that one.
    """
    # Markdown's rules are recall's, not a search's: imported here.
    from apus.vault.markdown import heading

    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if trigger in _triggers_of_line(line)), None)
    if at is None:
        return None
    first = next((i for i in range(at, -1, -1) if heading(lines[i]) is not None), 0)
    after = next((i for i in range(at + 1, len(lines)) if heading(lines[i]) is not None), None)
    last = len(lines) - 1 if after is None else after - 1
    while last > at and not lines[last].strip():
        last -= 1
    return first, last


def _triggers_of_line(line: str) -> tuple[str, ...]:
    return annotations_in(line).triggers if "<!--" in line else ()
