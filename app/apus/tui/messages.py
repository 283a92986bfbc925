"""Messages shared by several widgets and screens."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


@dataclass
class OpenInEditor(Message):
    """Open a note (vault-relative path) in the user's editor at a line."""

    rel_path: str
    line: int = 1


@dataclass
class OpenInReader(Message):
    """Show a note full-screen, scrolled to a line range (1-based, inclusive)."""

    rel_path: str
    start_line: int = 1
    end_line: int = 1
