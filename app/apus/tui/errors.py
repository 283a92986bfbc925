"""Turn a failed worker into a notification; the app keeps running."""

from __future__ import annotations

from textual.app import App
from textual.worker import Worker, WorkerState

from apus.errors import ApusError


def error_text(error: BaseException | None) -> str:
    if isinstance(error, ApusError):
        return str(error)
    if error is None:
        return "Something went wrong."
    return f"{type(error).__name__}: {error}"


def notify_worker_error(app: App[object], worker: Worker[object]) -> None:
    title = {
        "search": "Search failed",
        "sync": "Indexing failed",
        "status": "Status unavailable",
        "listing": "Listing notes failed",
        "preview": "Preview failed",
    }.get(worker.group, "Background task failed")
    app.notify(error_text(worker.error), title=title, severity="error", timeout=8)


class NotifiesWorkerErrors:
    """Mixed into the app and its screens: a failed worker becomes a notification."""

    app: App[object]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            notify_worker_error(self.app, event.worker)
