"""At most N passages of one note in an answer, the passages of a note that touch made one.

A long note that matches well otherwise fills the top ten with 3-5 of its chunks, often
neighbours that say one thing: a reader (a model above all) gets fewer distinct sources for
the same space. The note's best passages keep their places; the rest make room.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from apus.search.engine import SearchHit
from apus.search.snippet import SNIPPET_CHARS

DEFAULT_PER_NOTE = 2
# The most passages fetched to fill an answer after per-note: enough for the largest answer
# (200 passages) at the default of 2 a note.
OVERFETCH_CAP = 600
# Lines that may lie between two passages that are still one stretch of text.
ADJACENT_GAP = 1
# A merged passage's snippet: the two it joins, no longer than two snippets.
MERGED_SNIPPET_CHARS = 2 * SNIPPET_CHARS


def fetch_for(shown: int, per_note: int) -> int:
    """How many passages to ask for so that `shown` remain once each note keeps `per_note`:
    a note's passages past its first `per_note` give way to other notes."""
    return min(shown * (1 + per_note), OVERFETCH_CAP)


def limit_per_note(hits: Sequence[SearchHit], per_note: int) -> list[SearchHit]:
    """`hits` (best first) with at most `per_note` passages per path; a passage whose lines
    touch or overlap a kept one of its note is merged into it (at the kept one's place)."""
    kept: list[SearchHit] = []
    slots: dict[str, list[int]] = {}  # path -> indexes into `kept`
    for hit in hits:
        mine = slots.setdefault(hit.path, [])
        for index in mine:
            if _touch(kept[index], hit):
                kept[index] = _merge(kept[index], hit)
                break
        else:
            if len(mine) < per_note:
                mine.append(len(kept))
                kept.append(hit)
    return kept


def _touch(a: SearchHit, b: SearchHit) -> bool:
    """Overlapping, or neighbours: chunks are cut at blank lines, so one line may lie
    between the passages of one stretch of text."""
    if a.media is not None or b.media is not None:
        return False
    gap = ADJACENT_GAP + 1
    return a.start_line <= b.end_line + gap and b.start_line <= a.end_line + gap


def _merge(better: SearchHit, other: SearchHit) -> SearchHit:
    """One passage over both line ranges; the better one's score and explanation, both
    snippets in the order they stand in the note."""
    first, second = (better, other) if better.start_line <= other.start_line else (other, better)
    if second.snippet in first.snippet:
        snippet, highlights = first.snippet, first.highlights
    else:
        joined = first.snippet + " … "
        shift = len(joined)
        snippet = joined + second.snippet
        highlights = first.highlights + tuple((s + shift, e + shift) for s, e in second.highlights)
        if len(snippet) > MERGED_SNIPPET_CHARS:
            snippet = snippet[: MERGED_SNIPPET_CHARS - 1].rstrip() + "…"
            highlights = tuple((s, e) for s, e in highlights if e < len(snippet))
    return replace(
        better,
        start_line=min(better.start_line, other.start_line),
        end_line=max(better.end_line, other.end_line),
        snippet=snippet,
        highlights=highlights,
        legs=tuple(dict.fromkeys(better.legs + other.legs)),
    )
