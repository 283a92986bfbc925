"""Walk the vault roots: ignore rules, size guard, symlink safety, reading with replacement."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

NOTE_SUFFIXES = (".md", ".markdown")
DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class ScannedFile:
    """A candidate note found by the walk; only stat() was called on it."""

    rel_path: str  # relative to the vault root, '/'-separated ("../x/y.md" for extraPaths outside)
    abs_path: Path
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class SkippedFile:
    rel_path: str
    reason: str  # short and human: "larger than 5.0 MB", "binary file", "permission denied", ...


@dataclass
class ScanResult:
    files: list[ScannedFile]
    skipped: list[SkippedFile]


@dataclass(frozen=True)
class NoteText:
    """The decoded content of a note file, or why it cannot be used."""

    text: str | None  # None when skipped
    sha256: str  # of the raw bytes ("" when unreadable)
    skip_reason: str | None = None
    replaced_invalid_utf8: bool = False


class ScanCancelled(Exception):
    """The walk was stopped through its cancel event."""


def scan_roots(
    vault: Path,
    extra_paths: Sequence[Path] = (),
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    cancel: threading.Event | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> ScanResult:
    raise NotImplementedError


def read_note_text(path: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> NoteText:
    raise NotImplementedError
