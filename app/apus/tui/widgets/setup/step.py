"""What every step of the setup wizard offers the screen that walks through them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static

from apus.first_run import SetupChoices


class SetupStep(Vertical):
    """One step: whether the user may go on (`ready`), and what it adds to the choices
    (`contribute`). It says `Changed` when `ready` may have changed."""

    key: ClassVar[str]  # the step's name, as `SetupScreen.step` reports it
    heading: ClassVar[str]

    @dataclass
    class Changed(Message):
        """`ready` may have changed; `advance`: the user asked to go on (Enter in a field);
        `focus_next`: the step is done and the Next button should have the focus."""

        step: SetupStep
        advance: bool = False
        focus_next: bool = False

        @property
        def control(self) -> SetupStep:
            return self.step

    def __init__(self) -> None:
        super().__init__(id=f"step-{self.key}")
        self.testing = False  # one request to the chosen provider is under way

    @property
    def ready(self) -> bool:
        return True

    def contribute(self, choices: SetupChoices) -> SetupChoices:
        return choices

    def enter(self) -> None:
        """The step is shown: put the focus where the user starts."""

    def show_verdict(self, status: Static, text: str | None) -> None:
        """A test's progress or verdict in `status` (None: hide it)."""
        status.update(text or "")
        status.display = bool(text)
        status.set_class(text is not None and text.startswith("✗"), "-error")
        status.set_class(text is not None and text.startswith("✓"), "-ok")
        if text is not None:
            self.call_after_refresh(status.scroll_visible, animate=False)
