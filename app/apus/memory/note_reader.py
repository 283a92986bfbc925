"""Reading an indexed note by the path a search gave: only notes, only inside the roots.

An agent may ask for any path at all. Only a path that names an indexed Markdown note, and
that still resolves (after symlinks) inside the vault or an `extraPaths` root, is read; the
file opened must be the one that was checked (no swap in between).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from apus.config import Settings
from apus.errors import ApusError
from apus.index.store import Store

# Lines handed out per call: enough for most notes, little enough for an agent's context.
DEFAULT_LINES = 200
MAX_LINES = 2000


class NoteRefusedError(ApusError):
    """A path that is not a readable indexed note (outside the roots, not indexed, gone)."""


@dataclass(frozen=True)
class NoteLines:
    """A window of a note's lines (1-based), and where the next window starts."""

    path: str
    text: str
    start: int
    lines: int  # lines in `text`
    total_lines: int
    # What was asked for goes on past `text`: the note, for a plain path (or `path#Lx`, a
    # page from line x); a citation's own range, for `path#Lx-Ly`. A citation read whole is
    # not truncated, however far the note goes on (`total_lines` says that).
    truncated: bool
    next_start: int | None  # where the next page of what was asked for starts


# A citation's line range, as search results write it: `#L12-L30`, or one line `#L12`.
# Checked before the digits become a number: Python refuses to convert more than 4,300, and a
# note of a billion lines is far beyond the largest file the index reads.
_MAX_LINE_DIGITS = 9
_ADDRESS = re.compile(r"#L(?P<start>[0-9]+)(?:-L?(?P<end>[0-9]+))?\Z")


@dataclass(frozen=True)
class NoteAddress:
    """A path and, when it was a citation, the lines it points at."""

    path: str
    start: int | None = None
    end: int | None = None  # None: from `start` on, one page


def parse_address(raw: str) -> NoteAddress:
    """`path#Lx-Ly` / `path#Lx` (a search result's `citation`) or a plain path.

    A `#` that is not followed by a line range stays part of the path (note names may
    hold one).
    """
    match = _ADDRESS.search(raw)
    if match is None:
        return NoteAddress(raw)
    if max(len(match["start"]), len(match["end"] or "")) > _MAX_LINE_DIGITS:
        raise NoteRefusedError(
            f"{raw[: match.start()]}#L… names a line beyond any note (a line number of more "
            f"than {_MAX_LINE_DIGITS} digits).",
            fix="pass the citation as a search result gives it (path#L<start>-L<end>)",
        )
    start, end = int(match["start"]), match["end"]
    if start < 1 or (end is not None and int(end) < start):
        raise NoteRefusedError(
            f"{raw} has no such line range: lines count from 1 and a range runs forward.",
            fix="pass the citation as a search result gives it (path#L<start>-L<end>)",
        )
    return NoteAddress(raw[: match.start()], start, None if end is None else int(end))


def read_address(
    settings: Settings, store: Store | None, raw: str, start: int, count: int
) -> NoteLines:
    """The lines `raw` names: a citation's range (long ranges come in pages of `count`),
    from its line on for `path#Lx`, else `count` lines from `start`."""
    address = parse_address(raw)
    if address.start is None:
        return read_note_lines(settings, store, raw, start, count)
    until = None
    if address.end is not None:
        count = address.end - address.start + 1
        until = address.end
    window = read_note_lines(settings, store, address.path, address.start, count, until=until)
    if window.lines == 0 and window.total_lines:
        raise NoteRefusedError(
            f"{raw} points past the end of the note ({window.total_lines} lines now); "
            "it has changed since the citation was made.",
            fix=f"search again, or read it from the top: memory_get path={window.path!r}",
        )
    return window


def normalise_note_path(raw: str) -> str:
    """How a path is written in the store: forward slashes, no leading `./`."""
    text = raw.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text


def read_note_lines(
    settings: Settings,
    store: Store | None,
    raw_path: str,
    start: int,
    count: int,
    *,
    until: int | None = None,
) -> NoteLines:
    """`count` lines from `start`; `until`: the last line asked for (a citation's end),
    else the note's end: `truncated` says whether what was asked for goes on."""
    rel_path, real = resolve_indexed_note(settings, store, raw_path)
    text = _read_checked(settings, rel_path, real)
    lines = text.splitlines()
    first = max(1, start)
    count = max(1, min(count, MAX_LINES))  # a longer range comes in pages
    window = lines[first - 1 : first - 1 + count]
    following = first - 1 + len(window)
    asked_end = len(lines) if until is None else min(until, len(lines))
    truncated = following < asked_end
    return NoteLines(
        path=rel_path,
        text="\n".join(window),
        start=first,
        lines=len(window),
        total_lines=len(lines),
        truncated=truncated,
        next_start=following + 1 if truncated else None,
    )


def resolve_indexed_note(
    settings: Settings, store: Store | None, raw_path: str
) -> tuple[str, Path]:
    """(the store's path, the real file) for a path an agent or a user gave, or
    NoteRefusedError saying why it cannot be read."""
    # Scanning and media rules are imported by a command that reads a note, not by a search.
    from apus.index.media import is_media_path
    from apus.vault.scan import is_note_name

    vault = settings.vault_path()
    rel_path = _relative_form(raw_path, vault)
    if is_media_path(rel_path):
        raise NoteRefusedError(
            f"{raw_path} is an image or audio file: it has no lines to read.",
            fix="open it with a viewer; its search result gives its type and size",
        )
    if not is_note_name(Path(rel_path).name):
        raise NoteRefusedError(
            f"{raw_path} is not a Markdown note; only indexed notes (.md, .markdown) are read.",
            fix="pass a path from a search result",
        )
    if store is None or store.file_by_path(rel_path) is None:
        raise NoteRefusedError(
            f"{raw_path} is not an indexed note of {vault}.",
            fix="pass a path from a search result (or run `apus memory index` first)",
        )
    real = Path(os.path.realpath(vault / rel_path))
    roots = [Path(os.path.realpath(root)) for root in (vault, *settings.extra_roots())]
    if not any(real == root or real.is_relative_to(root) for root in roots):
        raise NoteRefusedError(
            f"{raw_path} resolves outside the vault and its extra paths; it is not read.",
            fix="pass a path from a search result",
        )
    return rel_path, real


def _relative_form(raw_path: str, vault: Path) -> str:
    path = normalise_note_path(raw_path)
    if not path:
        raise NoteRefusedError("The note path is empty.", fix="pass a path from a search result")
    if Path(path).is_absolute():
        # Absolute paths name a note by where it is: compare it as the store writes it.
        return Path(os.path.relpath(os.path.abspath(path), vault)).as_posix()
    return path


def _read_checked(settings: Settings, rel_path: str, real: Path) -> str:
    from apus.vault.scan import read_note_text

    try:
        info = os.stat(real)
    except OSError as exc:
        raise NoteRefusedError(
            f"{rel_path} cannot be read ({exc.strerror or exc}).",
            fix="run `apus memory index` to bring the index up to date",
        ) from exc
    note = read_note_text(
        real,
        max_file_bytes=settings.search.sync.max_file_bytes,
        expected_identity=(info.st_dev, info.st_ino),
    )
    if note.text is None:
        raise NoteRefusedError(
            f"{rel_path} cannot be read: {note.skip_reason or 'unreadable'}.",
            fix="run `apus memory index` to bring the index up to date",
        )
    return note.text
