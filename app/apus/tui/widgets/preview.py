"""The note preview: a note rendered as Markdown, scrolled to and marking the matched passage."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownBlock

from apus.tui.messages import OpenInEditor
from apus.tui.notes import NoteDocument, load_note


class NotePreview(Vertical):
    """Shows one note; `show_note` loads it off the UI thread and marks lines start..end."""

    DEFAULT_CSS = """
    NotePreview #preview-title {
        height: auto;
        padding: 0 1 1 1;
    }
    NotePreview #preview-scroll {
        height: 1fr;
        padding: 0 1;
    }
    NotePreview MarkdownBlock.-match {
        background: $accent 12%;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "edit", "Edit", id="edit_note", tooltip="Open the note in $EDITOR here"),
    ]

    def __init__(self, *, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(id=id)
        self.placeholder = placeholder
        self.document: NoteDocument | None = None
        self.start_line = 1
        self.end_line = 1

    def compose(self) -> ComposeResult:
        yield Static(self.placeholder, id="preview-title", markup=False)
        with VerticalScroll(id="preview-scroll"):
            yield Markdown(id="preview-markdown")

    def focus_text(self) -> None:
        self.query_one("#preview-scroll", VerticalScroll).focus()

    def clear(self) -> None:
        self.workers.cancel_group(self, "preview")
        self.document = None
        self.query_one("#preview-title", Static).update(self.placeholder)
        self.query_one(Markdown).update("")

    def show_note(self, vault: Path, rel_path: str, start_line: int = 0, end_line: int = 0) -> None:
        """Load and render a note; lines are 1-based file lines, 0 means no passage."""
        self._load_note(vault, rel_path, start_line, end_line)

    @work(exclusive=True, group="preview", exit_on_error=False)
    async def _load_note(self, vault: Path, rel_path: str, start_line: int, end_line: int) -> None:
        document = await asyncio.to_thread(
            load_note, vault, rel_path, focus_line=max(1, start_line)
        )
        await self._display_note(document, start_line, end_line)

    async def _display_note(self, document: NoteDocument, start_line: int, end_line: int) -> None:
        self.document = document
        self.start_line, self.end_line = max(1, start_line), max(1, end_line)
        heading = Content.assemble(
            (document.title, "bold $text-primary"), "\n", (document.rel_path, "$text-muted")
        )
        if start_line:
            heading = heading + Content.styled(f"  lines {start_line}–{end_line}", "$text-muted")
        if document.clipped:
            heading = heading + Content.styled(
                "  (long note: showing the part around the passage)", "$text-warning"
            )
        self.query_one("#preview-title", Static).update(heading)
        markdown = self.query_one(Markdown)
        if document.problem:
            await markdown.update(f"*This note cannot be shown: {document.problem}.*")
            return
        await markdown.update(document.text)
        target = self._mark(markdown, document, start_line, end_line)
        scroll = self.query_one("#preview-scroll", VerticalScroll)
        if target is None:
            scroll.scroll_home(animate=False)
        else:
            self.call_after_refresh(scroll.scroll_to_widget, target, top=True, animate=False)

    @staticmethod
    def _mark(
        markdown: Markdown, document: NoteDocument, start_line: int, end_line: int
    ) -> MarkdownBlock | None:
        """Add the -match class to top-level blocks overlapping the passage; return the first."""
        if not start_line:
            return None
        first = start_line - document.first_line  # 0-based, into the rendered text
        last = end_line - document.first_line + 1  # exclusive
        target: MarkdownBlock | None = None
        for block in markdown.query_children(MarkdownBlock):
            begin, finish = block.source_range
            overlaps = begin < last and finish > first
            block.set_class(overlaps, "-match")
            if overlaps and target is None:
                target = block
        return target

    def action_edit(self) -> None:
        if self.document is not None:
            self.post_message(OpenInEditor(self.document.rel_path, self.start_line))
