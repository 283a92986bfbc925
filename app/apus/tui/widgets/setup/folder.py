"""Setup step 1: the notes folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.widgets import Input, Static

from apus.first_run import FolderCheck, SetupChoices
from apus.tui.widgets.folder_chooser import FolderChooser
from apus.tui.widgets.setup.step import SetupStep


class FolderStep(SetupStep):
    """Ready once the folder typed or picked is usable; contributes the vault."""

    key = "folder"
    heading = "Your notes folder"

    def __init__(self, initial: str, root: Path | None) -> None:
        super().__init__()
        self.initial = initial
        self.root = root
        self.folder: FolderCheck | None = None

    def compose(self) -> ComposeResult:
        yield Static(
            "Apus searches a folder of Markdown notes: an Obsidian vault, a journal, a "
            "docs tree. It only reads your notes; it never changes them.",
            classes="intro",
        )
        yield FolderChooser(self.initial, root=self.root, id="folder-chooser")

    @property
    def ready(self) -> bool:
        return self.folder is not None and self.folder.usable

    def contribute(self, choices: SetupChoices) -> SetupChoices:
        assert self.folder is not None and self.folder.path is not None
        return replace(choices, vault=self.folder.path)

    def enter(self) -> None:
        self.query_one("#folder-input", Input).focus()

    @on(FolderChooser.Checked)
    def _checked(self, event: FolderChooser.Checked) -> None:
        self.folder = event.check
        self.post_message(self.Changed(self, advance=event.submitted and event.check.usable))
