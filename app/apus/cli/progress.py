"""A rich progress bar on stderr for index syncs, and the sync an evaluation runs behind it."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from apus.indexing.progress import SyncProgress

if TYPE_CHECKING:
    from apus.config import Settings


class SyncProgressBar:
    def __init__(self, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> SyncProgressBar:
        if self.enabled:
            self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.enabled:
            self._progress.stop()

    def update(self, event: SyncProgress) -> None:
        if not self.enabled:
            return
        task = self._tasks.get(event.phase)
        if task is None:
            task = self._progress.add_task(event.label, total=None)
            self._tasks[event.phase] = task
        self._progress.update(task, completed=event.done, total=event.total or None)


def index_for_evaluation(settings: Settings, *, show_progress: bool) -> None:
    """Index an evaluation's vault before its questions are asked, with the bar on stderr; a
    reason embeddings could not be made is said there too (the figures are then keyword's)."""
    from apus.memory import Memory

    with Memory(settings=settings) as memory, SyncProgressBar(enabled=show_progress) as bar:
        report = memory.sync(progress=bar.update)
    if report.embedding.problem is not None:
        click.secho(f"Embeddings: {report.embedding.message()}", fg="yellow", err=True)
