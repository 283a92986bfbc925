"""The search result list: title, path, date, highlighted snippet and leg badges per hit."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from apus.memory.hit_json import from_partial_vectors
from apus.search.results import SearchHit
from apus.tui.format import flatten_snippet
from apus.tui.messages import OpenInEditor

# Badge text per leg: words people use, not engine terms.
_BADGES = {"keyword": "words", "vector": "meaning", "path": "name"}
# Added to the meaning badge while the vectors are still being built.
_PARTIAL = " · partial vectors"


def hit_content(hit: SearchHit, width: int, coverage: float | None = None) -> Content:
    """Three short lines for one hit; the snippet is cut to fit about two lines. A hit
    search by meaning found while it covered only part of the vault (`coverage`, the
    answer's) says so on its badge."""
    partial = from_partial_vectors(hit, coverage)
    badges: list[tuple[str, str] | str] = []
    for leg in hit.legs:
        badge = _BADGES.get(leg, leg) + (_PARTIAL if partial and leg == "vector" else "")
        badges.extend([" ", (f" {badge} ", f"$text-{_leg_color(leg)} on $panel")])
    title = Content.assemble((hit.title or hit.path, "bold"), *badges)
    location = hit.path if hit.start_line <= 1 or hit.media else f"{hit.path}:{hit.start_line}"
    meta = Content.assemble((location, "$text-muted"))
    if hit.media:
        meta = Content.assemble(meta, ("  ", ""), (hit.media.label, "$text-secondary"))
    if hit.note_date:
        meta = Content.assemble(meta, ("  ", ""), (hit.note_date, "$text-secondary"))
    text, spans = flatten_snippet(hit.snippet, hit.highlights, max(40, 2 * (width - 2)))
    snippet = Content(text)
    for start, end in spans:
        snippet = snippet.stylize("bold $text-accent underline", start, end)
    return Content("\n").join([title, meta, snippet])


def _leg_color(leg: str) -> str:
    return {"keyword": "primary", "vector": "success", "path": "warning"}.get(leg, "primary")


class ResultList(OptionList):
    """Hits of the current query; Enter reads a note, `e` edits it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "edit", "Edit", id="edit_note", tooltip="Open the note in $EDITOR here"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.hits: list[SearchHit] = []

    def show_hits(
        self, hits: list[SearchHit], *, same_query: bool = False, coverage: float | None = None
    ) -> None:
        """Replace the list. When better results for the same query arrive (hybrid after
        keyword), a hit the user moved to stays highlighted; a new query starts at the top.
        `coverage`: the answer's, while search by meaning covered only part of the vault."""
        previous = self.highlighted_hit if same_query and self.highlighted else None
        width = max(20, self.scrollable_content_region.width or self.size.width or 60)
        self.hits = list(hits)
        options: list[Option | None] = []
        for index, hit in enumerate(self.hits):
            if index:
                options.append(None)
            options.append(Option(hit_content(hit, width, coverage), id=str(index)))
        self.set_options(options)
        if not self.hits:
            return
        keep = 0
        if previous is not None:
            for index, hit in enumerate(self.hits):
                if (hit.path, hit.start_line) == (previous.path, previous.start_line):
                    keep = index
                    break
        self.highlighted = self.get_option_index(str(keep))
        if keep == 0:
            self.scroll_home(animate=False)

    @property
    def highlighted_hit(self) -> SearchHit | None:
        option = self.highlighted_option
        if option is None or option.id is None or not self.hits:
            return None
        index = int(option.id)
        return self.hits[index] if index < len(self.hits) else None

    def hit_for(self, option: Option) -> SearchHit | None:
        if option.id is None:
            return None
        index = int(option.id)
        return self.hits[index] if index < len(self.hits) else None

    def action_cursor_up(self) -> None:
        if self.highlighted in (None, 0):
            self.screen.focus_previous()
            return
        super().action_cursor_up()

    def action_edit(self) -> None:
        hit = self.highlighted_hit
        if hit is not None:
            self.post_message(OpenInEditor(hit.path, hit.start_line))
