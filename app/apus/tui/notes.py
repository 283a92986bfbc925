"""Read a note for display: the body without frontmatter, and where its lines sit in the file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from apus.index.media import is_media_path, media_facts
from apus.units import human_size
from apus.vault.markdown import parse_note, split_lines
from apus.vault.scan import read_note_text

# Rendering a huge note as Markdown would freeze the preview; show this many lines around the
# passage instead (the editor is one key away for the rest).
WINDOW_LINES = 1200
_WINDOW_BEFORE = 200


@dataclass(frozen=True)
class NoteDocument:
    """The part of a note the preview renders.

    `first_line` is the 1-based line of the file where `text` begins, so a chunk's file line
    range can be mapped onto the rendered Markdown blocks.
    """

    rel_path: str
    abs_path: Path
    title: str
    text: str
    first_line: int
    clipped: bool = False
    problem: str = ""  # why the note could not be read ("" when fine)


def note_path(vault: Path, rel_path: str) -> Path:
    return (vault / rel_path).resolve()


def load_note(
    vault: Path, rel_path: str, *, focus_line: int = 1, max_file_bytes: int | None = None
) -> NoteDocument:
    """Read a note (never writes); a long note is cut to a window around `focus_line`."""
    path = note_path(vault, rel_path)
    stem = Path(rel_path).stem
    if is_media_path(rel_path):
        return _media_document(rel_path, path)
    note = (
        read_note_text(path)
        if max_file_bytes is None
        else read_note_text(path, max_file_bytes=max_file_bytes)
    )
    if note.text is None:
        reason = note.skip_reason or "unreadable"
        return NoteDocument(rel_path, path, stem, "", 1, problem=reason)
    parsed = parse_note(note.text, fallback_title=stem)
    lines = split_lines(parsed.body)
    first_line = parsed.body_start_line
    if len(lines) <= WINDOW_LINES:
        return NoteDocument(rel_path, path, parsed.title, parsed.body, first_line)
    focus = max(0, focus_line - first_line)
    start = max(0, min(focus - _WINDOW_BEFORE, len(lines) - WINDOW_LINES))
    window = "".join(lines[start : start + WINDOW_LINES])
    return NoteDocument(rel_path, path, parsed.title, window, first_line + start, clipped=True)


def _media_document(rel_path: str, path: Path) -> NoteDocument:
    """An indexed image or audio file: what it is, since it has no text to show."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return NoteDocument(rel_path, path, path.name, "", 1, problem=str(exc.strerror).lower())
    facts = media_facts(rel_path, size)
    label = facts.label if facts else human_size(size)
    text = (
        f"**{label}**\n\nThis file is found by its meaning (the embedding model reads the "
        f"image or sound itself) and by its name. Open it with your viewer:\n\n`{path}`"
    )
    return NoteDocument(rel_path, path, path.name, text, 1)
