"""The vault watcher: real file events, debounced into batches, stopped by its event."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apus.watch import watch_notes

DEBOUNCE_MS = 200
# Generous: the watcher thread is scheduled by a busy machine; nothing here measures speed.
WAIT_S = 20.0


class Watching:
    def __init__(self, roots: list[Path]) -> None:
        self.batches: list[frozenset[Path]] = []
        self.arrived = threading.Condition()
        self.stop = threading.Event()
        self.ready = threading.Event()  # the watcher says its OS watch is installed
        self.thread = threading.Thread(
            target=watch_notes,
            args=(roots, self._record),
            kwargs={"stop": self.stop, "debounce_ms": DEBOUNCE_MS, "on_ready": self.ready.set},
        )

    def _record(self, paths: frozenset[Path]) -> None:
        with self.arrived:
            self.batches.append(paths)
            self.arrived.notify_all()

    def changed(self) -> set[Path]:
        with self.arrived:
            return set().union(*self.batches) if self.batches else set()

    def wait_for(self, paths: set[Path]) -> bool:
        deadline = time.monotonic() + WAIT_S
        with self.arrived:
            while not paths <= (set().union(*self.batches) if self.batches else set()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.arrived.wait(left)
        return True


@pytest.fixture
def watching(tmp_path: Path) -> Iterator[tuple[Path, Watching]]:
    # The vault sits under a hidden folder on purpose: only hidden parts inside it are skipped.
    vault = tmp_path / ".config-like" / "vault"
    (vault / "sub").mkdir(parents=True)
    watcher = Watching([vault])
    watcher.thread.start()
    # Files are touched only once the watch is installed, so none can be missed.
    assert watcher.ready.wait(WAIT_S), "the watcher never said its watch was installed"
    assert watcher.batches == []
    yield vault, watcher
    watcher.stop.set()
    watcher.thread.join(WAIT_S)
    assert not watcher.thread.is_alive()


def test_note_changes_arrive_in_a_batch(watching: tuple[Path, Watching]) -> None:
    vault, watcher = watching
    first = vault / "a.md"
    second = vault / "sub" / "b.markdown"
    first.write_text("a", encoding="utf-8")
    second.write_text("b", encoding="utf-8")
    (vault / "photo.png").write_bytes(b"png")
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "workspace.md").write_text("w", encoding="utf-8")
    assert watcher.wait_for({first.resolve(), second.resolve()})
    seen = watcher.changed()
    assert (vault / "photo.png").resolve() not in seen
    assert not [path for path in seen if ".obsidian" in path.parts]


def test_a_moved_away_folder_is_reported(watching: tuple[Path, Watching], tmp_path: Path) -> None:
    vault, watcher = watching
    (vault / "sub" / "n.md").write_text("n", encoding="utf-8")
    assert watcher.wait_for({(vault / "sub" / "n.md").resolve()})
    (vault / "sub").rename(tmp_path / "elsewhere")
    assert watcher.wait_for({(vault / "sub").resolve()})


def test_missing_roots_return_at_once(tmp_path: Path) -> None:
    calls: list[frozenset[Path]] = []
    watch_notes([tmp_path / "absent"], calls.append, stop=threading.Event())
    assert calls == []
