"""The help screen: every key, what it does, and the id to remap it in config.toml."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from apus.tui.format import home_relative

_NAMES = {
    "escape": "Esc",
    "slash": "/",
    "enter": "Enter",
    "question_mark": "?",
    "up": "↑",
    "down": "↓",
    "tab": "Tab",
}

HelpSections = Sequence[tuple[str, Sequence[BindingType]]]


def key_label(keys: str) -> str:
    """'ctrl+r,f5' -> 'Ctrl+R / F5'; a plain letter stays as typed."""
    labels = []
    for key in keys.split(","):
        *modifiers, last = key.strip().split("+")
        name = _NAMES.get(last, last)
        if len(name) == 1 and modifiers:
            name = name.upper()
        elif len(name) > 1 and name not in _NAMES.values():
            name = name.upper() if name[0] == "f" and name[1:].isdigit() else name.title()
        labels.append("+".join([*(m.title() for m in modifiers), name]))
    return " / ".join(labels)


def help_content(sections: HelpSections, keymap: Mapping[str, str], config_file: str) -> Content:
    lines: list[Content] = [
        Content.styled("Type to search. Results come from exact words first, then meaning.", ""),
        Content(""),
    ]
    for title, bindings in sections:
        rows = [b for b in bindings if isinstance(b, Binding) and b.id and b.description]
        if not rows:
            continue
        lines.append(Content.styled(title, "bold $text-primary"))
        for binding in rows:
            assert binding.id is not None
            keys = key_label(keymap.get(binding.id, binding.key))
            lines.append(
                Content.assemble(
                    (f"  {keys:<16}", "bold"),
                    (f"{binding.description:<16}", ""),
                    (f"{binding.tooltip:<52}", "$text-muted"),
                    (binding.id, "$text-secondary"),
                )
            )
        lines.append(Content(""))
    lines.append(
        Content.styled(
            f'Remap a key by its id in {config_file}, e.g.\n  [tui.keys]\n  sync_index = "ctrl+u"',
            "$text-muted",
        )
    )
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,f1", "app.pop_screen", "Close", id="close_help", tooltip="Close help"),
    ]

    def __init__(self, sections: HelpSections, keymap: Mapping[str, str], config_file: str):
        super().__init__()
        self.sections = sections
        self.keymap = keymap
        self.config_file = config_file

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog") as dialog:
            dialog.border_title = "Keys"
            yield Static(help_content(self.sections, self.keymap, home_relative(self.config_file)))
        yield Footer()
