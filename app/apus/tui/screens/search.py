"""The search screen: type a query, get keyword hits at once, then hybrid hits, and a preview."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Footer, Input, Label, OptionList, Static
from textual.worker import get_current_worker

from apus.search.options import SearchOptions
from apus.search.results import SearchHit, SearchResponse
from apus.search.vector_leg import percent_text
from apus.tui.errors import NotifiesWorkerErrors
from apus.tui.format import plural
from apus.tui.live import LiveMemory
from apus.tui.messages import OpenInReader
from apus.tui.preferences import SearchPreferences
from apus.tui.screens.with_status import StatusBarScreen
from apus.tui.widgets.conversation import ConversationView
from apus.tui.widgets.preview import NotePreview
from apus.tui.widgets.related import RelatedNotes
from apus.tui.widgets.results import ResultList
from apus.vault import transcripts

# A fast typist's intermediate queries are skipped: at most one search per this interval.
SEARCH_DEBOUNCE_S = 0.08
# Moving through results with the arrow keys should not render every note passed over.
PREVIEW_DEBOUNCE_S = 0.06


class SearchScreen(NotifiesWorkerErrors, StatusBarScreen):
    """Results as you type: keyword first, then hybrid when embeddings can answer.

    Searches the session of `live` with `preferences`; the app binds the generations below
    (`data_bind`): a changed index or ranking searches again, a changed vault starts over.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "clear_or_focus",
            "Clear",
            id="clear_search",
            tooltip="Clear the query (or go back to the search box)",
        ),
        Binding("slash", "focus_query", "Find", id="focus_search", tooltip="Go to the search box"),
        Binding("down", "focus_results", "Results", id="to_results", show=False),
        Binding(
            "ctrl+t",
            "toggle_related",
            "Related",
            id="toggle_related",
            tooltip="Show or hide the notes related to the previewed one",
        ),
        Binding(
            "ctrl+o",
            "app.toggle_conversations",
            "Conversations",
            id="toggle_conversations",
            show=False,  # the footer is full; the empty search screen names the key instead
            tooltip="Search agent conversations too (when transcripts are indexed)",
        ),
    ]

    @dataclass
    class ResultsReady(Message, bubble=False):
        """A search finished; `final` is False for the keyword pass when hybrid follows."""

        query: str
        response: SearchResponse
        final: bool

    index_generation: reactive[int] = reactive(0, init=False)
    ranking_generation: reactive[int] = reactive(0, init=False)
    vault_generation: reactive[int] = reactive(0, init=False)

    def __init__(self, live: LiveMemory, preferences: SearchPreferences) -> None:
        super().__init__()
        self.live = live
        self.preferences = preferences
        self.query_text = ""
        self.response: SearchResponse | None = None
        self._search_timer: Timer | None = None
        self._preview_timer: Timer | None = None
        self._previewed: tuple[str, int, int] | None = None
        self._typed_at = 0.0
        self._searched_at = 0.0
        # Keystroke to results shown, per pass ("keyword", "hybrid"), for the last query.
        self.latency_ms: dict[str, float] = {}

    def compose(self) -> ComposeResult:
        with Horizontal(id="query-row"):
            yield Input(placeholder="Search your notes…", id="query")
            yield Label("", id="search-info", markup=False)
        with Horizontal(id="search-body"):
            with Vertical(id="results-pane"):
                yield Static("", id="results-message", markup=False)
                yield ResultList(id="results")
            with Vertical(id="preview-pane"):
                yield NotePreview(placeholder="Select a result to preview it here.", id="preview")
                yield ConversationView(self.live, id="conversation-preview")
                yield RelatedNotes(self.live, id="related")
        yield self.status_bar()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(RelatedNotes).display = self.preferences.show_related
        self.query_one(ConversationView).display = False
        self._counts_changed(self.counts)
        self.query_one("#query", Input).focus()

    # A binding sets its value again when it starts (old == new), and maybe before the screen
    # is mounted (which shows the state anyway): only a change on a mounted screen is news.
    def watch_index_generation(self, old: int, new: int) -> None:
        if old != new and self.is_mounted:
            self._index_changed()

    def watch_ranking_generation(self, old: int, new: int) -> None:
        if old != new and self.is_mounted:
            self._index_changed()

    def watch_vault_generation(self, old: int, new: int) -> None:
        if old != new and self.is_mounted:
            self._vault_changed()

    def watch_counts(self, counts: str) -> None:
        if self.is_mounted:
            self._counts_changed(counts)

    # -- typing and searching -----------------------------------------------------------

    @on(Input.Changed, "#query")
    def _query_changed(self, event: Input.Changed) -> None:
        self.query_text = event.value
        self._typed_at = time.perf_counter()
        if self._search_timer is not None:
            self._search_timer.stop()
        if not event.value.strip():
            self.workers.cancel_group(self, "search")
            self._show_empty()
            return
        # The first keystroke after a pause searches at once; a burst of typing searches at
        # most once per SEARCH_DEBOUNCE_S, and always for the last text typed.
        wait = SEARCH_DEBOUNCE_S - (self._typed_at - self._searched_at)
        if wait <= 0:
            self.run_search()
        else:
            self._search_timer = self.set_timer(wait, self.run_search)

    def run_search(self) -> None:
        """Search the current query now (cancelling any search still running)."""
        query = self.query_text.strip()
        if query:
            self._searched_at = time.perf_counter()
            self._search(query, self.preferences.options())

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, query: str, options: SearchOptions) -> None:
        """Keyword results at once, merged ones when the vector leg answers: one keyword leg
        per keystroke. A provider that must not be ignored raises after the keyword results
        are out, and the error is shown with them."""
        worker = get_current_worker()
        for response in self.live.session.search_stages(query, options):
            if worker.is_cancelled:
                return
            self.post_message(self.ResultsReady(query, response, final=response.final))

    def on_search_screen_results_ready(self, message: ResultsReady) -> None:
        if message.query != self.query_text.strip():
            return  # the user typed on; a newer search is coming
        response = message.response
        same_query = self.response is not None and self.response.query == response.query
        if response.mode == "hybrid" and "vector" in response.legs:
            self.live.note_vector_leg(response.legs["vector"])
        self.response = response
        latency = (time.perf_counter() - self._typed_at) * 1000
        self.latency_ms[response.mode] = latency
        self.log.info(
            f"{response.mode} results for {message.query!r} {latency:.0f} ms after the keystroke"
        )
        results = self.query_one(ResultList)
        results.show_hits(response.hits, same_query=same_query, coverage=response.coverage)
        self._show_info(response, message.final)
        self._show_message(response)
        hit = results.highlighted_hit
        if hit is None:
            self._previewed = None
            self.query_one(NotePreview).clear()
            self.query_one(RelatedNotes).show_for(None)
        else:
            self._preview(hit)

    def _show_info(self, response: SearchResponse, final: bool) -> None:
        kind = "keyword" if response.mode == "keyword" else "hybrid"
        vector = response.legs.get("vector")
        if response.mode == "hybrid" and vector is not None and not vector.ran:
            kind = "keyword only"
        pending = "" if final else " · meaning…"
        if response.coverage is not None:  # still embedding: say how far meaning reached
            kind += f" · meaning covers {percent_text(response.coverage)}"
        rerank = response.legs.get("rerank")
        if rerank is not None:  # the second stage ran, or the merged order stands (and why)
            kind += " · reranked" if rerank.ran else f" · not reranked: {rerank.reason}"
        if self.preferences.include_conversations:
            kind += " · with conversations"
        timing = f" · {response.ms:.0f} ms" if self.preferences.show_timings else ""
        info = f"{plural(len(response.hits), 'hit')} · {kind}{timing}{pending}"
        self.query_one("#search-info", Label).update(info)

    def _show_message(self, response: SearchResponse) -> None:
        message = self.query_one("#results-message", Static)
        keyword = response.legs.get("keyword")
        if response.hits:
            message.display = False
            return
        message.display = True
        if keyword is not None and not keyword.ran:
            message.update(f"Keyword search is not ready: {keyword.reason}.")
        else:
            message.update(f"No notes match “{response.query}”.")

    def _show_empty(self) -> None:
        self.response = None
        self._previewed = None
        self.query_one(NotePreview).clear()
        self.query_one(RelatedNotes).show_for(None)
        self.query_one(ResultList).show_hits([])
        self.query_one("#search-info", Label).update("")
        self._counts_changed(self.counts)
        self.query_one("#results-message", Static).display = True

    def _counts_changed(self, counts: str) -> None:
        if self.query_text.strip():
            return
        where = f" ({counts})" if counts else ""
        self.query_one("#results-message", Static).update(
            f"Type to search your notes{where}.\n\n"
            "↓ moves into the results, Enter reads a note full-screen, "
            "e opens it in your editor, Ctrl+P lists every command." + self._conversations_hint()
        )

    def _conversations_hint(self) -> str:
        """Where transcripts are indexed, the key that adds them to the search."""
        settings = self.live.settings
        if not transcripts.enabled(settings.search):
            return ""
        key = settings.tui.keys.get("toggle_conversations", "ctrl+o")
        shown = "+".join(part.capitalize() for part in key.split(",")[0].split("+"))
        return f"\n\nAgent conversations are indexed: {shown} adds them to the search or not."

    def _index_changed(self) -> None:
        self._previewed = None  # the note may have changed on disk
        self.query_one(RelatedNotes).refresh_for_current()
        self.run_search()

    def _vault_changed(self) -> None:
        if self.query_text.strip():
            self._previewed = None
            self.query_one(NotePreview).clear()
            self.run_search()
        else:
            self._show_empty()

    # -- preview and reading ------------------------------------------------------------

    @on(OptionList.OptionHighlighted, "#results")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        hit = self.query_one(ResultList).hit_for(event.option)
        if hit is None:
            return
        if self._preview_timer is not None:
            self._preview_timer.stop()
        self._preview_timer = self.set_timer(PREVIEW_DEBOUNCE_S, lambda: self._preview(hit))

    def _preview(self, hit: SearchHit) -> None:
        key = (hit.path, hit.start_line, hit.end_line)
        if key == self._previewed:
            return
        self._previewed = key
        conversation = hit.source == "sessions"
        self.query_one(NotePreview).display = not conversation
        self.query_one(ConversationView).display = conversation
        if conversation:
            session_key = hit.path.removeprefix("sessions:")
            self.query_one(ConversationView).show(session_key, hit.start_line, hit.end_line)
            self.query_one(RelatedNotes).show_for(None)  # related notes are about notes
            return
        # An image or audio file has no lines to mark.
        lines = (0, 0) if hit.media else (hit.start_line, hit.end_line)
        self.query_one(NotePreview).show_note(self.live.vault, hit.path, *lines)
        self.query_one(RelatedNotes).show_for(hit.path)

    @on(OptionList.OptionSelected, "#results")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        hit = self.query_one(ResultList).hit_for(event.option)
        if hit is not None:
            self.post_message(OpenInReader(hit.path, hit.start_line, hit.end_line))

    @on(Input.Submitted, "#query")
    def _submitted(self, _event: Input.Submitted) -> None:
        hit = self.query_one(ResultList).highlighted_hit
        if hit is not None:
            self.post_message(OpenInReader(hit.path, hit.start_line, hit.end_line))

    # -- actions --------------------------------------------------------------------------

    def action_clear_or_focus(self) -> None:
        query = self.query_one("#query", Input)
        if query.has_focus:
            query.value = ""
        else:
            query.focus()

    def action_toggle_related(self) -> None:
        related = self.query_one(RelatedNotes)
        related.display = self.preferences.show_related = not related.display
        if related.display:
            related.refresh_for_current()

    def action_focus_query(self) -> None:
        self.query_one("#query", Input).focus()

    def action_focus_results(self) -> None:
        results = self.query_one(ResultList)
        if results.option_count:
            results.focus()

    def selected_path(self) -> str | None:
        """The note the user is looking at (for commands such as copy path)."""
        hit = self.query_one(ResultList).highlighted_hit
        return hit.path if hit is not None and hit.source != "sessions" else None
