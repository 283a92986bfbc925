"""Choose a notes folder: type a path or pick it in a tree; the choice is checked as you go."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DirectoryTree, Input, Static

from apus.first_run import FolderCheck, check_folder
from apus.tui.format import home_relative
from apus.tui.widgets.trees import FolderTree


class FolderChooser(Vertical):
    """An input, a verdict line and a folder tree; posts `Checked` after each validation."""

    DEFAULT_CSS = """
    FolderChooser {
        height: 1fr;
    }
    FolderChooser #folder-verdict {
        height: auto;
        margin: 0 0 1 1;
    }
    FolderChooser #folder-verdict.-error { color: $text-error; }
    FolderChooser #folder-verdict.-warning { color: $text-warning; }
    FolderChooser #folder-verdict.-ok { color: $text-success; }
    FolderChooser FolderTree {
        height: 1fr;
        border: round $panel-lighten-2;
    }
    """

    @dataclass
    class Checked(Message):
        """A folder was validated; `submitted` when the user pressed Enter to confirm it."""

        chooser: FolderChooser
        check: FolderCheck
        submitted: bool = False

    def __init__(self, initial: str = "", *, root: Path | None = None, id: str | None = None):
        super().__init__(id=id)
        self.initial = initial
        self.root = root or Path.home()
        self.check: FolderCheck | None = None
        self._pending: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Input(
            self.initial, placeholder="~/notes  (type a path, or pick below)", id="folder-input"
        )
        yield Static("", id="folder-verdict", markup=False)
        yield FolderTree(self.root, id="folder-tree")

    def on_mount(self) -> None:
        if self.initial:
            self._validate(self.initial)

    @property
    def value(self) -> str:
        return self.query_one("#folder-input", Input).value

    @on(Input.Changed, "#folder-input")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if self._pending is not None:
            self._pending.stop()
        self._pending = self.set_timer(0.25, lambda: self._validate(event.value))

    @on(Input.Submitted, "#folder-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._pending is not None:
            self._pending.stop()
        self._validate(event.value, submitted=True)

    @on(DirectoryTree.DirectorySelected)
    def _picked(self, event: DirectoryTree.DirectorySelected) -> None:
        event.stop()
        self.query_one("#folder-input", Input).value = home_relative(event.path)

    @work(exclusive=True, group="folder-check", exit_on_error=False)
    async def _validate(self, raw: str, *, submitted: bool = False) -> None:
        check = await asyncio.to_thread(check_folder, raw)
        self.check = check
        verdict = self.query_one("#folder-verdict", Static)
        for level in ("ok", "warning", "error"):
            verdict.set_class(check.level == level, f"-{level}")
        marks = {"ok": "✓", "warning": "!", "error": "✗"}
        verdict.update(f"{marks[check.level]} {check.message}")
        self.post_message(self.Checked(self, check, submitted))
