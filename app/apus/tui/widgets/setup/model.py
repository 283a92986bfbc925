"""Setup step 3 (local provider): download the model, or use a .gguf already here."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, ProgressBar, Static
from textual.worker import Worker, WorkerState, get_current_worker

from apus.first_run import SetupChoices, check_gguf, default_model, download_model, model_ready
from apus.tui.errors import error_text
from apus.tui.widgets.setup.step import SetupStep
from apus.units import human_size

if TYPE_CHECKING:
    from apus.embed.local.catalog import ModelManifest


class ModelStep(SetupStep):
    """Ready once the model is downloaded and verified, or a usable .gguf is named;
    contributes the model (or the file) to a local provider's choices."""

    key = "model"
    heading = "The embedding model"

    @dataclass
    class DownloadProgress(Message, bubble=False):
        done: int
        total: int

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ModelStep.DownloadProgress)

    def __init__(self, catalog: Mapping[str, ModelManifest] | None) -> None:
        super().__init__()
        self.catalog = catalog
        self.manifest: ModelManifest | None = None
        self.model_ok = False
        self.gguf_path = ""

    def compose(self) -> ComposeResult:
        yield Static("", id="model-info", markup=False)
        yield ProgressBar(id="download-bar", show_eta=False)
        yield Static("", id="download-status", markup=False)
        yield Static("", id="model-test", markup=False)
        with Horizontal(classes="buttons"):
            yield Button("Download", id="download", variant="primary")
            yield Button("Cancel download", id="cancel-download", disabled=True)
        with Vertical(id="offline"):
            yield Static("", id="offline-message", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Continue with keyword search only", id="keyword-only")
            yield Input(placeholder="…or the path of a .gguf model you have", id="gguf")
            yield Static("", id="gguf-verdict", markup=False)

    def on_mount(self) -> None:
        self.query_one("#model-test").display = False
        self.query_one("#offline").display = False
        self.query_one("#download-bar", ProgressBar).display = False

    # -- what the screen asks ------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.model_ok or bool(self.gguf_path)

    def contribute(self, choices: SetupChoices) -> SetupChoices:
        if choices.provider != "local":
            return choices
        model = self.manifest.name if self.manifest else ""
        return replace(choices, model=model, model_path=self.gguf_path)

    def model_to_test(self) -> Path | None:
        """The file this step has verified, whichever catalogue it came from."""
        if self.gguf_path or self.manifest is None:
            return None
        from apus.embed.local.download import model_path

        return model_path(self.manifest)

    def enter(self) -> None:
        if self.manifest is None:
            self.manifest = default_model(self.catalog)
        manifest = self.manifest
        self.query_one("#model-info", Static).update(
            f"{manifest.name}: {manifest.description}\n"
            f"{human_size(manifest.size)} from {manifest.repo}, checked against its published "
            "sha256 before first use. An interrupted download continues where it stopped."
        )
        self._check_model(manifest)
        self.query_one("#download", Button).focus()

    def show_test(self, text: str | None) -> None:
        self.show_verdict(self.query_one("#model-test", Static), text)

    def show_failure(self, text: str) -> None:
        self.query_one("#offline-message", Static).update(
            text + "\nYou can search by keyword now and turn meaning search on later."
        )
        self.query_one("#offline").display = True
        self.query_one("#keyword-only", Button).focus()

    def leave(self) -> None:
        """Going back: a download stops (it continues where it stopped next time)."""
        self.workers.cancel_group(self, "download")

    # -- an earlier download, or a new one -----------------------------------------------

    @work(exclusive=True, group="model-check", exit_on_error=False)
    async def _check_model(self, manifest: ModelManifest) -> None:
        status = self.query_one("#download-status", Static)
        status.update("Looking for an earlier download…")
        ready = await asyncio.to_thread(model_ready, manifest)
        self.model_ok = ready
        status.update("Already downloaded and verified." if ready else "Not downloaded yet.")
        self.query_one("#download", Button).display = not ready
        self.post_message(self.Changed(self, focus_next=ready))

    @on(Button.Pressed, "#download")
    def _start_download(self) -> None:
        if self.manifest is None:
            return
        self.query_one("#offline").display = False
        self.query_one("#download", Button).disabled = True
        self.query_one("#cancel-download", Button).disabled = False
        bar = self.query_one("#download-bar", ProgressBar)
        bar.display = True
        bar.update(total=self.manifest.size)
        self.query_one("#download-status", Static).update("Connecting…")
        self._download(self.manifest)

    @on(Button.Pressed, "#cancel-download")
    def _cancel_download(self) -> None:
        self.workers.cancel_group(self, "download")

    @work(thread=True, exclusive=True, group="download", exit_on_error=False)
    def _download(self, manifest: ModelManifest) -> Path:
        worker = get_current_worker()

        def progress(done: int, total: int) -> None:
            self.post_message(self.DownloadProgress(done, total))

        return download_model(manifest, progress=progress, cancel=worker.cancelled_event)

    def on_model_step_download_progress(self, message: DownloadProgress) -> None:
        bar = self.query_one("#download-bar", ProgressBar)
        bar.update(total=message.total or None, progress=message.done)
        self.query_one("#download-status", Static).update(
            f"Downloading: {human_size(message.done)} of {human_size(message.total)}"
        )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        finished = (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
        if event.worker.group == "download" and event.state in finished:
            event.stop()  # handled here: the screen notifies only unexpected failures
            self._download_finished(event.worker)

    def _download_finished(self, worker: Worker[Path]) -> None:
        from apus.embed.local.download import DownloadCancelled

        self.query_one("#download", Button).disabled = False
        self.query_one("#cancel-download", Button).disabled = True
        status = self.query_one("#download-status", Static)
        if worker.state == WorkerState.SUCCESS:
            self.model_ok = True
            status.update("Downloaded and verified.")
            self.query_one("#download", Button).display = False
        elif worker.state == WorkerState.CANCELLED or isinstance(worker.error, DownloadCancelled):
            status.update("Download paused; press Download to continue where it stopped.")
            self.query_one("#download", Button).label = "Resume download"
        else:
            status.update("The model could not be downloaded.")
            self.query_one("#download", Button).label = "Try again"
            self.query_one("#offline-message", Static).update(error_text(worker.error))
            self.query_one("#offline").display = True
            self.query_one("#keyword-only", Button).focus()
        self.post_message(self.Changed(self))

    # -- a .gguf already on this computer ------------------------------------------------

    @on(Input.Changed, "#gguf")
    def _gguf_typed(self, event: Input.Changed) -> None:
        event.stop()
        self._check_gguf(event.value)

    @work(exclusive=True, group="gguf-check", exit_on_error=False)
    async def _check_gguf(self, raw: str) -> None:
        await asyncio.sleep(0.2)
        check = await asyncio.to_thread(check_gguf, raw)
        verdict = self.query_one("#gguf-verdict", Static)
        verdict.update(("✓ " if check.ok else "✗ ") + check.message if raw.strip() else "")
        verdict.set_class(check.ok, "-ok")
        verdict.set_class(not check.ok, "-error")
        self.gguf_path = str(check.path) if check.ok and check.path else ""
        self.post_message(self.Changed(self))
