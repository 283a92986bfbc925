"""A tiny app factory for the TUI tests: a small fixed vault, its index, and apps on it."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path

from textual.message import Message
from textual.notifications import Notify
from textual.pilot import Pilot
from textual.widgets import Input
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from apus.config import SettingsSource
from apus.first_run import Hardware
from apus.index.status import IndexStatus
from apus.indexing.sync import SyncReport
from apus.memory import Memory
from apus.tui.app import ApusApp
from apus.tui.screens.wizard import WizardOptions

SIZE = (120, 40)

# A vault small enough to reason about by hand; every word a test searches for is placed.
NOTES = {
    "MEMORY.md": "---\ntitle: Long-term memory\n---\n# Long-term memory\n\n"
    "- The blog deploys with `make deploy` from ~/src/blog.\n"
    "- Coffee: V60 at 94 °C, 18 g to 300 g.\n",
    "notes/coffee-brewing.md": "# Coffee brewing\n\n## V60\n\n- 18 g coffee, 300 g water\n"
    "- Bloom 40 s, total three minutes\n\n## Moka pot\n\nLow heat, off the stove when it "
    "sputters.\n",
    "notes/garden.md": "# Garden\n\nTomatoes and basil on the balcony; water every evening "
    "in July.\n",
    "daily/2026-11-20.md": "# Friday 20 November\n\nBaked bread; the crumb was open and the "
    "crust dark. Coffee with Sam at the canal café.\n",
    "daily/2026-11-27.md": "# Friday 27 November\n\nRouter firmware updated; the hallway "
    "closet is warm again.\n",
}


def write_vault(root: Path, notes: dict[str, str] = NOTES) -> Path:
    for rel_path, text in notes.items():
        path = root / rel_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def index_for_app(vault: Path, config_file: Path) -> SyncReport:
    """Index the vault in this process with the settings the app will use (its config file,
    this process's environment, any provider): the app runs in this process too.
    `support.vaults.index_vault` is the same for a command's settings, embeddings off."""
    with Memory(SettingsSource(config_file=config_file, vault=vault)) as memory:
        return memory.sync()


def make_app(
    vault: Path | None,
    config_file: Path,
    *,
    app_class: type[ApusApp] = ApusApp,
    watch: bool = False,
    setup: bool = False,
    wizard: WizardOptions | None = None,
) -> ApusApp:
    return app_class(
        SettingsSource(config_file=config_file, vault=vault),
        setup=setup,
        wizard=wizard,
        watch=watch,
    )


def fixed_hardware() -> Hardware:
    return Hardware(
        False, 8, "No GPU offload in this llama.cpp build: the model runs on 8 CPU cores."
    )


class SnapshotApp(ApusApp):
    """Hides what changes from run to run: timings, the sync time, the index size."""

    show_timings = False

    def load_status(self, *, deep: bool) -> IndexStatus:
        status = super().load_status(deep=deep)
        return dataclasses.replace(
            status, last_sync="2026-11-28T09:30:00+01:00", index_bytes=123_456
        )

    def on_mount(self) -> None:
        super().on_mount()
        self.call_after_refresh(self._steady_cursors)

    def _steady_cursors(self) -> None:
        for field in self.screen.query(Input):
            field.cursor_blink = False


# Workers that run for the app's whole life: the vault watcher, DirectoryTree's load queue.
_ENDLESS_GROUPS = frozenset({"watch", "_loader"})


async def settle(pilot: Pilot[object], *, rounds: int = 3) -> None:
    """Wait until every worker that can finish has finished, and the session's background
    syncs too, then let the UI catch up."""
    app = pilot.app
    for _ in range(rounds):
        await pilot.pause()
        while (busy := _busy_workers(app)) or _syncing(app):
            for worker in busy:
                with contextlib.suppress(WorkerCancelled, WorkerFailed):
                    await worker.wait()
            if _syncing(app):
                await pilot.pause(0.02)
            await pilot.pause()


def _busy_workers(app: object) -> list[Worker[object]]:
    return [
        w
        for w in app.workers  # type: ignore[attr-defined]
        if w.group not in _ENDLESS_GROUPS and not w.is_finished
    ]


def _syncing(app: object) -> bool:
    live = getattr(app, "live", None)
    memory = live.memory if live is not None else None
    queue = memory.syncs if memory is not None else None
    return queue is not None and not queue.idle


class Recorder:
    """Collects messages of the given types through `run_test(message_hook=...)`."""

    def __init__(self, *kinds: type[Message]) -> None:
        self.kinds = kinds
        self.seen: list[Message] = []

    def __call__(self, message: Message) -> None:
        if isinstance(message, self.kinds):
            self.seen.append(message)

    def of(self, kind: type[Message]) -> list[Message]:
        return [m for m in self.seen if isinstance(m, kind)]

    def notifications(self) -> list[str]:
        texts = []
        for message in self.of(Notify):
            assert isinstance(message, Notify)
            note = message.notification
            texts.append(f"{note.title}: {note.message}" if note.title else note.message)
        return texts


def paths_of(hits: Iterable[object], key: Callable[[object], str]) -> list[str]:
    return [key(hit) for hit in hits]
