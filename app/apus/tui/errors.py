"""Turn a failed worker into a notification; the app keeps running."""

from __future__ import annotations

from textual.app import App
from textual.worker import Worker

from apus.errors import ApusError


def error_text(error: BaseException | None) -> str:
    if isinstance(error, ApusError):
        return f"{error.message}\nFix: {error.fix}" if error.fix else error.message
    if error is None:
        return "Something went wrong."
    return f"{type(error).__name__}: {error}"


def notify_worker_error(app: App[object], worker: Worker[object]) -> None:
    title = {
        "search": "Search failed",
        "sync": "Indexing failed",
        "status": "Status unavailable",
        "preview": "Preview failed",
    }.get(worker.group, "Background task failed")
    app.notify(error_text(worker.error), title=title, severity="error", timeout=8)
