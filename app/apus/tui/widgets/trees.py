"""Directory trees that show only notes (browse) or only folders (choosing a vault)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from textual.widgets import DirectoryTree

from apus.vault.scan import NOTE_SUFFIXES


def _visible(path: Path) -> bool:
    return not path.name.startswith(".")


class NotesTree(DirectoryTree):
    """The vault's folders and Markdown notes; hidden entries and other files are left out."""

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [
            path
            for path in paths
            if _visible(path) and (_is_dir(path) or path.suffix.lower() in NOTE_SUFFIXES)
        ]


class FolderTree(DirectoryTree):
    """Folders only, for picking a notes folder."""

    def filter_paths(self, paths: Iterable[Path]) -> Iterable[Path]:
        return [path for path in paths if _visible(path) and _is_dir(path)]


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False
