"""The status screen: what `apus memory status --deep` reports, refreshed on demand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Footer, Static

from apus.index.status import EmbeddingsState, IndexStatus
from apus.tui.errors import NotifiesWorkerErrors
from apus.tui.format import eta_text, home_relative, plural
from apus.tui.screens.with_status import StatusBarScreen
from apus.units import human_size

_LABEL_WIDTH = 12
_LIST_LIMIT = 30


def status_content(status: IndexStatus, *, probing: bool = False) -> Content:
    """The status as aligned `Label  value` lines, like the command line prints it."""
    lines: list[Content] = []

    def row(label: str, value: str | Content, style: str = "") -> None:
        body = value if isinstance(value, Content) else Content.styled(value, style)
        lines.append(Content.assemble((label.ljust(_LABEL_WIDTH), "bold"), body))

    row("Vault", home_relative(status.vault))
    row("Index", home_relative(status.index_dir))
    if not status.indexed:
        row("Notes", "not indexed yet (indexing starts by itself; Ctrl+R to start it now)")
    else:
        row(
            "Notes",
            f"{plural(status.files, 'file')}, {plural(status.chunks, 'chunk')}, "
            f"{human_size(status.index_bytes)} on disk",
        )
        row("Last sync", status.last_sync or "never")
        row("Keyword", status.keyword, "$text-success" if status.keyword == "ready" else "")
        if status.store_set_aside is not None:
            moved = status.store_set_aside
            row(
                "Repaired",
                f"a damaged database ({moved.reason}) was moved to {home_relative(moved.moved_to)}",
                "$text-warning",
            )
    row("Provider", status.provider)
    _embeddings_rows(status.embeddings, row)
    if probing:
        row("", "probing the embedding provider…", "$text-muted")
    if status.skipped:
        row("Skipped", plural(len(status.skipped), "file"), "$text-warning")
        for item in status.skipped[:_LIST_LIMIT]:
            row("", f"{item.rel_path}: {item.reason}", "$text-muted")
        if len(status.skipped) > _LIST_LIMIT:
            row("", f"… and {len(status.skipped) - _LIST_LIMIT} more", "$text-muted")
    outcome = status.last_sync_outcome
    if outcome is not None and not outcome.ok:
        row("Sync", f"failed at {outcome.as_dict()['at']}: {outcome.error}", "$text-error")
        if outcome.fix:
            row("", f"Fix: {outcome.fix}", "$text-muted")
    if outcome is not None and outcome.recovered is not None:
        row("Crashes", outcome.recovered.sentence(), "$text-warning")
        row("", f"Fix: {outcome.recovered.fix}", "$text-muted")
    if status.problems:
        row(
            "Problems", plural(len(status.problems), "note") + " not indexed whole", "$text-warning"
        )
        for problem in status.problems[:_LIST_LIMIT]:
            row("", f"{problem.path}: {problem.reason}", "$text-muted")
        row("", f"Fix: {status.problems[0].fix}", "$text-muted")
    if status.replaced_utf8:
        row(
            "Note",
            f"{plural(len(status.replaced_utf8), 'file')} had invalid UTF-8 "
            "(shown with replacement characters)",
            "$text-warning",
        )
        for path in status.replaced_utf8[:_LIST_LIMIT]:
            row("", path, "$text-muted")
    return Content("\n").join(lines)


def _embeddings_rows(state: EmbeddingsState, row: Callable[..., None]) -> None:
    style = {"ready": "$text-success", "paused": "$text-error"}.get(state.state, "$text-warning")
    value = Content.styled(state.state, style)
    if state.reason:
        value = value + f": {state.reason}"
    row("Embeddings", value)
    if state.fix:
        row("", Content.styled(f"Fix: {state.fix}", "$text-accent"))
    for label, item in embedding_fields(state):
        row("", f"{label}: {item}", "$text-muted")


# The provider's own facts (`describe()`), named as a reader knows them; the model, its
# dimensions and prefixes are shown from the identity already.
_DESCRIBE_LABELS = {
    "state": "server",
    "endpoint": "endpoint",
    "pid": "server pid",
    "device": "device",
    "gpu_layers": "GPU layers",
    "gpu_offload": "GPU offload",
    "offloaded_layers": "layers on the GPU",
    "model_layers": "model layers",
    "log": "server log",
    "error": "server error",
    "fix": "server fix",
    "system_info": "llama.cpp",
    "crashes": "crashes",
    "file": "model file",
}
_SHOWN_FROM_IDENTITY = frozenset({"provider", "model", "dims", "prefix_scheme"})
_PATH_KEYS = frozenset({"file", "log"})


def embedding_fields(state: EmbeddingsState) -> list[tuple[str, str]]:
    """The details of the embeddings as (label, value) lines: identity, progress, the
    provider's facts and the probe, each value in words."""
    fields: list[tuple[str, str]] = []
    identity = state.identity
    if identity is not None:
        fields += [
            ("model", f"{identity.model} ({identity.provider})"),
            ("dimensions", str(identity.dims)),
            ("prefixes", identity.prefix_scheme),
            ("identity", identity.key()),
            ("vectors", f"{state.vectors or 0:,}"),
        ]
    if state.percent is not None:
        fields.append(("progress", f"{state.percent}%"))
    if state.eta_seconds is not None:
        fields.append(("eta", eta_text(state.eta_seconds)))
    for key, item in (state.describe or {}).items():
        if item is None or item == "" or key in _SHOWN_FROM_IDENTITY:
            continue
        value = home_relative(Path(item)) if key in _PATH_KEYS else _words(item)
        fields.append((_DESCRIBE_LABELS.get(key, key.replace("_", " ")), value))
    probe = state.probe
    if probe is not None:
        if probe.ok:
            fields.append(("probe", f"ok, {probe.dims} dimensions in {probe.seconds:.2f} s"))
        else:
            fields.append(("probe", f"failed after {probe.seconds:.2f} s: {probe.error}"))
    if state.cache_entries is not None:
        fields.append(("cache", plural(state.cache_entries, "cached embedding")))
    return fields


def _words(value: object) -> str:
    """A fact from `describe()` as text: nested facts as `name value` pairs, never a repr."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return "; ".join(
            f"{str(key).replace('_', ' ')} {_words(item)}"
            for key, item in value.items()
            if item is not None
        )
    if isinstance(value, list | tuple):
        return ", ".join(_words(item) for item in value)
    return str(value)


class StatusScreen(NotifiesWorkerErrors, StatusBarScreen):
    """The full index status from `load_status`; the provider is probed once each time it
    opens or refreshes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "app.pop_screen", "Back", id="close_status", tooltip="Close status"),
        Binding("r", "refresh_status", "Refresh", id="refresh_status", tooltip="Probe again"),
        Binding(
            "ctrl+r",
            "app.sync_index",
            "Update index",
            id="sync_index",
            tooltip="Index changed notes now",
        ),
    ]

    @dataclass
    class Loaded(Message, bubble=False):
        status: IndexStatus
        probing: bool

    def __init__(self, load_status: Callable[..., IndexStatus]) -> None:
        super().__init__()
        self.load_status = load_status

    def compose(self) -> ComposeResult:
        yield Static("Index status", id="status-title")
        with VerticalScroll(id="status-scroll"):
            yield Static("Reading the index…", id="status-body")
        yield self.status_bar()
        yield Footer()

    def on_mount(self) -> None:
        self.action_refresh_status()

    def action_refresh_status(self) -> None:
        self._load_status()

    @work(thread=True, exclusive=True, group="status", exit_on_error=False)
    def _load_status(self) -> None:
        self.post_message(self.Loaded(self.load_status(deep=False), probing=True))
        self.post_message(self.Loaded(self.load_status(deep=True), probing=False))

    def on_status_screen_loaded(self, message: Loaded) -> None:
        body = status_content(message.status, probing=message.probing)
        self.query_one("#status-body", Static).update(body)
