"""A dialog to choose another notes folder (the command palette's Switch vault)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from apus.tui.widgets.folder_chooser import FolderChooser


class FolderPickerScreen(ModalScreen[Path | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="close_picker", tooltip="Keep the current vault"),
    ]

    def __init__(self, current: str, *, root: Path | None = None) -> None:
        super().__init__()
        self.current = current
        self.root = root

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog") as dialog:
            dialog.border_title = "Switch vault"
            yield Static("Which notes folder should Apus search?", classes="intro")
            yield FolderChooser(self.current, root=self.root, id="picker-chooser")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="picker-cancel")
                yield Button("Use this folder", id="picker-use", variant="primary", disabled=True)

    @on(FolderChooser.Checked)
    def _checked(self, event: FolderChooser.Checked) -> None:
        self.query_one("#picker-use", Button).disabled = not event.check.usable
        if event.submitted:
            self._use()

    @on(Button.Pressed, "#picker-use")
    def _use(self) -> None:
        check = self.query_one(FolderChooser).check
        if check is not None and check.usable and check.path is not None:
            self.dismiss(check.path)

    @on(Button.Pressed, "#picker-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
