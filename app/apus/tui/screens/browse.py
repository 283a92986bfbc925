"""Browse the vault: a tree of notes, recently changed notes, and dated notes by day."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DirectoryTree, Footer, OptionList, TabbedContent, TabPane, Tree
from textual.widgets.option_list import Option

from apus.tui.errors import NotifiesWorkerErrors
from apus.tui.format import day_label
from apus.tui.live import LiveMemory
from apus.tui.messages import OpenInReader
from apus.tui.screens.with_status import StatusBarScreen
from apus.tui.widgets.preview import NotePreview
from apus.tui.widgets.trees import NotesTree
from apus.vault.dates import date_from_path
from apus.vault.scan import ScannedFile, scan_roots

RECENT_LIMIT = 100


@dataclass(frozen=True)
class VaultListing:
    """Notes ordered for the Recent and By day tabs."""

    recent: list[ScannedFile]
    by_day: list[tuple[dt.date, list[str]]]  # newest day first


def list_vault(files: list[ScannedFile]) -> VaultListing:
    recent = sorted(files, key=lambda f: (-f.mtime_ns, f.rel_path))[:RECENT_LIMIT]
    days: dict[dt.date, list[str]] = defaultdict(list)
    for scanned in files:
        day = date_from_path(scanned.rel_path)
        if day is not None:
            days[day].append(scanned.rel_path)
    by_day = [(day, sorted(days[day])) for day in sorted(days, reverse=True)]
    return VaultListing(recent, by_day)


class BrowseScreen(NotifiesWorkerErrors, StatusBarScreen):
    """The vault of `live`; the app binds the generations: a new index or vault lists again."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "f",
            "read",
            "Full screen",
            id="read_note",
            tooltip="Read the previewed note full-screen",
        ),
    ]

    @dataclass
    class Listed(Message, bubble=False):
        listing: VaultListing

    index_generation: reactive[int] = reactive(0, init=False)
    vault_generation: reactive[int] = reactive(0, init=False)

    def __init__(self, live: LiveMemory) -> None:
        super().__init__()
        self.live = live

    def compose(self) -> ComposeResult:
        with Horizontal(id="browse-body"):
            with TabbedContent(id="browse-tabs"):
                with TabPane("Folders", id="tab-folders"):
                    yield NotesTree(self.live.vault, id="notes-tree")
                with TabPane("Recent", id="tab-recent"):
                    yield OptionList(id="recent")
                with TabPane("By day", id="tab-days"):
                    yield Tree("Dated notes", id="days")
            yield NotePreview(placeholder="Choose a note to preview it here.", id="preview")
        yield self.status_bar()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#days", Tree).show_root = False
        self.refresh_listing()

    # Only a change on a mounted screen is news (see SearchScreen).
    def watch_index_generation(self, old: int, new: int) -> None:
        if old != new and self.is_mounted:
            self.refresh_listing()

    def watch_vault_generation(self, old: int, new: int) -> None:
        if old != new and self.is_mounted:
            self._vault_changed()

    def refresh_listing(self) -> None:
        self._list()

    @work(thread=True, exclusive=True, group="listing", exit_on_error=False)
    def _list(self) -> None:
        settings = self.live.settings
        scan = scan_roots(
            settings.vault_path(),
            settings.extra_roots(),
            max_file_bytes=settings.search.sync.max_file_bytes,
            cross_devices=settings.search.sync.cross_devices,
        )
        self.post_message(self.Listed(list_vault(scan.files)))

    def on_browse_screen_listed(self, message: Listed) -> None:
        recent = self.query_one("#recent", OptionList)
        recent.set_options(
            Option(_recent_label(scanned), id=scanned.rel_path)
            for scanned in message.listing.recent
        )
        days = self.query_one("#days", Tree)
        days.clear()
        month_node = None
        month = None
        for index, (day, paths) in enumerate(message.listing.by_day):
            if (day.year, day.month) != month:
                month = (day.year, day.month)
                month_node = days.root.add(day.strftime("%B %Y"), expand=index == 0)
            assert month_node is not None
            for rel_path in paths:
                month_node.add_leaf(f"{day_label(day)}  {rel_path}", data=rel_path)

    def _vault_changed(self) -> None:
        self.query_one(NotesTree).path = self.live.vault
        self.query_one(NotePreview).clear()
        self.refresh_listing()

    def _preview(self, rel_path: str) -> None:
        self.query_one(NotePreview).show_note(self.live.vault, rel_path)

    @on(DirectoryTree.FileSelected, "#notes-tree")
    def _file_selected(self, event: DirectoryTree.FileSelected) -> None:
        path = event.path.resolve()
        vault = self.live.vault
        if path.is_relative_to(vault):
            self._preview(path.relative_to(vault).as_posix())

    @on(OptionList.OptionHighlighted, "#recent")
    def _recent_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id:
            self._preview(event.option.id)

    @on(OptionList.OptionSelected, "#recent")
    def _recent_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.post_message(OpenInReader(event.option.id))

    @on(Tree.NodeHighlighted, "#days")
    def _day_highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        if event.node.data:
            self._preview(event.node.data)

    def action_read(self) -> None:
        document = self.query_one(NotePreview).document
        if document is not None:
            self.post_message(OpenInReader(document.rel_path))

    def selected_path(self) -> str | None:
        document = self.query_one(NotePreview).document
        return document.rel_path if document is not None else None


def _recent_label(scanned: ScannedFile) -> Content:
    changed = dt.datetime.fromtimestamp(scanned.mtime_ns / 1e9).strftime("%Y-%m-%d %H:%M")
    return Content.assemble((scanned.rel_path, ""), "\n", (f"changed {changed}", "$text-muted"))
