"""Notes related to the one being previewed, from the session's `related` (as `memory related`
and the agent tool give them): the note's own vectors when embeddings are ready, else its
title and headings."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from apus.search.results import SearchHit
from apus.tui.live import LiveMemory
from apus.tui.messages import OpenInReader

# Enough to see what a note connects to without crowding out the preview.
RELATED_LIMIT = 8


class RelatedNotes(Vertical):
    """Follows `show_for(path)`; Enter on a related note reads it."""

    DEFAULT_CSS = """
    RelatedNotes {
        height: 12;
        border-top: hkey $panel-lighten-2;
    }
    RelatedNotes #related-title {
        height: 1;
        padding: 0 1;
        color: $text-muted;
    }
    RelatedNotes OptionList {
        height: 1fr;
        border: none;
        background: $background;
    }
    """

    @dataclass
    class Loaded(Message, bubble=False):
        path: str
        hits: list[SearchHit]
        how: str  # "vector" or "keyword"

    def __init__(self, live: LiveMemory, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.live = live
        self.path: str | None = None
        self.hits: list[SearchHit] = []

    def compose(self) -> ComposeResult:
        yield Static("Related notes", id="related-title", markup=False)
        yield OptionList(id="related-list")

    def show_for(self, path: str | None) -> None:
        """Look up the notes related to `path` (None: clear), unless hidden or unchanged."""
        if path == self.path:
            return
        self.path = path
        if path is None or not self.display:
            self._show([], "")
            return
        self._load(path)

    def refresh_for_current(self) -> None:
        path, self.path = self.path, None
        self.show_for(path)

    @work(thread=True, exclusive=True, group="related", exit_on_error=False)
    def _load(self, path: str) -> None:
        response = self.live.session.related(path, RELATED_LIMIT)
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(path, response.hits, response.mode))

    def on_related_notes_loaded(self, message: Loaded) -> None:
        if message.path == self.path:
            self._show(message.hits, message.how)

    def _show(self, hits: list[SearchHit], how: str) -> None:
        self.hits = hits
        by = {"vector": "by meaning", "keyword": "by title and headings"}.get(how, "")
        title = "Related notes" + (f" ({by})" if by and hits else "")
        if self.path is not None and not hits and how:
            title = "No related notes found"
        self.query_one("#related-title", Static).update(title)
        self.query_one(OptionList).set_options(
            Option(
                Content.assemble((hit.title or hit.path, "bold"), "  ", (hit.path, "$text-muted"))
            )
            for hit in hits
        )

    @on(OptionList.OptionSelected, "#related-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        hit = self.hits[event.option_index]
        self.post_message(OpenInReader(hit.path, hit.start_line, hit.end_line))


def _line(hit: SearchHit) -> Content:
    return Content.assemble((hit.title or hit.path, "bold"), "  ", (hit.path, "$text-muted"))
