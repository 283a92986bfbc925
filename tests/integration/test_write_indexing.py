"""An entry written by the session is indexed by a sync of that note alone: the vault is not
walked for it (a large vault made every write cost a whole scan), nothing else is read,
removed or forgotten, and a writer waits for the sync that indexes its own entry, not for
the syncs asked for after it. A change on disk that is the session's own write, already
indexed, asks for no sync."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest

from apus.config import Settings
from apus.indexing.progress import ProgressCallback
from apus.indexing.request import SyncRequest
from apus.indexing.sync import SyncReport
from apus.memory import Memory
from apus.memory.session import INDEX_WAIT_S
from apus.memory.sync_queue import SyncQueue, SyncStarted
from apus.memory.writer import Entry
from support.vaults import make_settings, search_paths, stored_paths, write_note
from support.vaults import sync as sync_index

NOW = dt.datetime(2026, 12, 2, 14, 30)
DAILY = "memory/2026-12-02.md"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    vault = tmp_path / "vault"
    write_note(vault, "notes/router.md", "# Router\n\nIn the hallway closet.\n")
    write_note(vault, "notes/huge.md", "# Huge\n\n" + "albatross " * 400 + "\n")
    settings = make_settings(
        vault, memory__write__enabled=True, memory__search__sync__maxFileBytes=1024
    )
    sync_index(settings)
    return settings


def _skipped(settings: Settings) -> list[str]:
    with Memory(settings=settings) as memory:
        return [item.rel_path for item in memory.status().skipped]


def test_an_entry_is_indexed_without_walking_the_vault(settings: Settings) -> None:
    vault = settings.vault_path()
    assert _skipped(settings) == ["notes/huge.md"]
    # A note added by hand since the last sync: a write does not go looking for it.
    write_note(vault, "notes/heron.md", "# Heron\n\nA grey heron by the canal.\n")
    with Memory(settings=settings) as memory:
        written = memory.write(Entry("Decided: the VPN moves to WireGuard."), NOW)
        assert written.indexed and written.entry.path == DAILY
    assert search_paths(settings, "wireguard") == [DAILY]
    assert search_paths(settings, "heron") == []
    assert stored_paths(settings) == {"notes/router.md", DAILY}
    assert _skipped(settings) == ["notes/huge.md"]  # what it says of other notes is kept
    sync_index(settings)  # the next walk finds the rest
    assert search_paths(settings, "heron") == ["notes/heron.md"]


def test_a_first_write_into_a_vault_never_indexed_reads_the_whole_vault(tmp_path: Path) -> None:
    """Before any sync has read the vault in, the note alone would leave every other note
    unsearched until a sync nothing asks for."""
    vault = tmp_path / "vault"
    write_note(vault, "notes/heron.md", "# Heron\n\nA grey heron by the canal.\n")
    settings = make_settings(vault, memory__write__enabled=True)
    with Memory(settings=settings) as memory:
        assert memory.write(Entry("Decided: the VPN moves to WireGuard."), NOW).indexed
    assert search_paths(settings, "heron") == ["notes/heron.md"]
    assert search_paths(settings, "wireguard") == [DAILY]
    # From then on, a write reads its note alone.
    write_note(vault, "notes/crane.md", "# Crane\n\nA crane over the river.\n")
    with Memory(settings=settings) as memory:
        assert memory.write(Entry("The crane photos are in the attic."), NOW).indexed
    assert search_paths(settings, "river") == []


def test_a_change_on_disk_that_is_the_session_s_own_write_asks_for_no_sync(
    settings: Settings,
) -> None:
    vault = settings.vault_path()
    started: list[SyncRequest] = []
    with Memory(settings=settings) as memory:
        memory.subscribe(
            lambda e: started.append(e.request) if isinstance(e, SyncStarted) else None
        )
        memory.start_live(watch=False)
        assert memory.syncs is not None and memory.syncs.wait_idle(timeout=120)
        written = memory.write(Entry("The router moved to the attic."), NOW)
        assert written.indexed
        assert started[-1] == SyncRequest(wait_s=INDEX_WAIT_S, notes=(DAILY,))
        count = len(started)
        memory._changed_on_disk(frozenset({(vault / DAILY).resolve()}))
        assert memory.syncs.wait_idle(timeout=120) and len(started) == count
        # An edit by hand is not indexed yet: that note is synced, alone.
        with (vault / DAILY).open("a", encoding="utf-8") as note:
            note.write("Typed by hand.\n")
        memory._changed_on_disk(frozenset({(vault / DAILY).resolve()}))
        assert memory.syncs.wait_idle(timeout=120)
        assert started[count:] == [SyncRequest(notes=(DAILY,))]
        # A note gone (removed, or moved away): only a walk of the vault can tell.
        (vault / "notes/router.md").unlink()
        memory._changed_on_disk(frozenset({(vault / "notes/router.md").resolve()}))
        assert memory.syncs.wait_idle(timeout=120)
        assert started[count + 1 :] == [SyncRequest()]
    assert search_paths(settings, "typed by hand") == [DAILY]
    assert search_paths(settings, "closet") == []


class _Scripted:
    """Syncs that end when the test says so, how it says so."""

    def __init__(self) -> None:
        self.started = threading.Semaphore(0)
        self.outcomes: list[BaseException | None] = []
        self.go = threading.Semaphore(0)

    def __call__(
        self, request: SyncRequest, cancel: threading.Event, progress: ProgressCallback
    ) -> SyncReport:
        self.started.release()
        self.go.acquire()
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return SyncReport()


def test_a_sync_of_some_notes_reads_only_what_the_walk_would_list(settings: Settings) -> None:
    vault = settings.vault_path()
    (vault / ".apusignore").write_text("private/\n", encoding="utf-8")
    notes = {
        "notes/plain.md": True,
        "private/diary.md": False,  # ignored
        ".hidden/secret.md": False,  # hidden
        "notes/image.png": False,  # not a note
    }
    for rel in notes:
        write_note(vault, rel, "# Kestrel\n\nA kestrel over the field.\n")
    outside = vault.parent / "outside.md"
    outside.write_text("# Kestrel\n\nA kestrel far away.\n", encoding="utf-8")
    (vault / "notes/linked.md").symlink_to(outside)  # the walk skips links out of the vault
    with Memory(settings=settings) as memory:
        memory.sync(SyncRequest(notes=(*notes, "notes/linked.md", "notes/missing.md")))
    assert search_paths(settings, "kestrel") == ["notes/plain.md"]
    sync_index(settings)
    assert search_paths(settings, "kestrel") == ["notes/plain.md"]  # what a walk finds too


def test_a_writer_waits_for_the_sync_that_does_its_work_and_no_later_one() -> None:
    runner = _Scripted()
    queue = SyncQueue(runner, lambda _event: None)
    try:
        first = queue.request(SyncRequest(notes=("a.md",)))
        assert runner.started.acquire(timeout=60)  # the first runs
        second = queue.request(SyncRequest(notes=("b.md",)))  # queued behind it
        assert (first, second) == (1, 2)
        runner.outcomes += [None, RuntimeError("disk full")]
        runner.go.release()
        assert queue.wait_for(first, timeout=60)  # done, though the second still waits
        assert runner.started.acquire(timeout=60)
        assert not queue.idle and queue.running
        runner.go.release()
        assert queue.wait_for(second, timeout=60) is False  # it ended, failing
    finally:
        queue.close()


def test_sync_requests_fold_their_notes_unless_one_walks_the_vault() -> None:
    one, two = SyncRequest(notes=("a.md",)), SyncRequest(notes=("b.md", "a.md"))
    assert one.merged(two) == SyncRequest(notes=("a.md", "b.md"))
    assert one.merged(SyncRequest()) == SyncRequest() == SyncRequest().merged(one)
    assert one.merged(SyncRequest(force=True)) == SyncRequest(force=True)
