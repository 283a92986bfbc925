"""Watch the vault folders and report changed note paths in debounced batches."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from watchfiles import Change, DefaultFilter, watch

from apus.vault.scan import NOTE_SUFFIXES

ChangeCallback = Callable[[frozenset[Path]], None]

# An editor that saves in several steps (temp file, rename, chmod) produces a burst of events;
# waiting for this much quiet turns the burst into one index update.
DEFAULT_DEBOUNCE_MS = 1500
# A folder that never stops changing (a sync client catching up) still gets indexed this often.
_MAX_BATCH_S = 10.0
# How often the watcher wakes up to check the stop event and the quiet period.
_POLL_MS = 100


class NoteChangeFilter(DefaultFilter):
    """Note files, and suffix-less paths (a moved or deleted folder of notes reports only itself).

    Hidden files and folders inside a root (.git, .obsidian, editor swap files) never count.
    """

    def __init__(self, roots: Sequence[Path], suffixes: Sequence[str] = NOTE_SUFFIXES) -> None:
        super().__init__()
        self._roots = [root.resolve() for root in roots]
        self._suffixes = tuple(suffixes)

    def __call__(self, change: Change, path: str) -> bool:
        if not super().__call__(change, path):
            return False
        candidate = Path(path)
        if any(part.startswith(".") for part in self._inner_parts(candidate)):
            return False
        suffix = candidate.suffix.lower()
        return suffix in self._suffixes or suffix == ""

    def _inner_parts(self, path: Path) -> tuple[str, ...]:
        for root in self._roots:
            if path.is_relative_to(root):
                return path.relative_to(root).parts
        return path.parts


def watch_notes(
    roots: Sequence[Path],
    on_change: ChangeCallback,
    *,
    stop: threading.Event,
    debounce_ms: int = DEFAULT_DEBOUNCE_MS,
    suffixes: Sequence[str] = NOTE_SUFFIXES,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Block until `stop` is set, calling `on_change` once per quiet batch of note changes.

    A batch is reported once `debounce_ms` pass without further changes (and at least every
    10 s while changes keep coming). Roots that do not exist are not watched; with none left
    this returns at once. `suffixes`: the file names that count (agent transcripts add
    `.jsonl`). `on_ready` is called once the OS watch is installed: every change from then
    on is reported (what a face, or a test, waits for before it counts on the watch).
    """
    existing = [root.resolve() for root in roots if root.is_dir()]
    if not existing:
        return
    quiet = debounce_ms / 1000
    pending: set[Path] = set()
    first_change = last_change = 0.0
    batches = watch(
        *existing,
        watch_filter=NoteChangeFilter(existing, suffixes),
        step=_POLL_MS,
        stop_event=stop,
        rust_timeout=_POLL_MS,
        yield_on_timeout=True,
        raise_interrupt=False,
    )
    for changes in batches:
        if on_ready is not None:
            # The first batch comes from a watcher already installed (watchfiles installs it
            # before it first waits), and holds any change made since.
            on_ready()
            on_ready = None
        if stop.is_set():
            return
        now = time.monotonic()
        if changes:
            if not pending:
                first_change = now
            pending.update(Path(path) for _change, path in changes)
            last_change = now
        if pending and (now - last_change >= quiet or now - first_change >= _MAX_BATCH_S):
            on_change(frozenset(pending))
            pending = set()
