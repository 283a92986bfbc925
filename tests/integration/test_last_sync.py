"""A failed sync is state: recorded beside the index, shown by status and doctor until a sync
succeeds, and retried by the live queue with growing delays until it does."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from apus.backoff import Backoff
from apus.memory import Memory
from apus.memory.session import MemoryEvent
from apus.memory.sync_queue import SyncFinished
from support.vaults import index_vault, make_settings, run_apus, run_json, search_paths, write_note

REFUSE = (
    "CREATE TRIGGER refuse BEFORE UPDATE ON meta BEGIN "
    "SELECT RAISE(ABORT, 'injected: no writes'); END;"
)


def test_a_vault_that_vanished_fails_status_and_doctor_until_a_sync_succeeds(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "a.md", "# A\n\nThe apricot.\n")
    index_vault(vault)
    assert run_json("--vault", vault, "memory", "status", "--json")["lastSync"]["ok"] is True
    vault.rename(tmp_path / "away")
    failed = run_apus("--vault", vault, "memory", "index", expect=1)
    assert "does not exist" in failed.stderr + failed.stdout
    (tmp_path / "away").rename(vault)
    status = run_json("--vault", vault, "memory", "status", "--json")
    last = status["lastSync"]
    assert last["ok"] is False and "does not exist" in last["error"] and last["fix"]
    assert last["failures"] == 1
    doctor = run_json_doctor(vault)
    sync_check = next(check for check in doctor["checks"] if check["name"] == "sync")
    assert not sync_check["ok"] and "does not exist" in sync_check["detail"]
    human = run_apus("--vault", vault, "memory", "status").stdout
    assert "FAILED" in human and "Fix:" in human
    run_apus("--vault", vault, "memory", "index")
    assert run_json("--vault", vault, "memory", "status", "--json")["lastSync"]["ok"] is True
    run_apus("--vault", vault, "doctor", expect=0)


def run_json_doctor(vault: Path) -> dict[str, Any]:
    return json.loads(run_apus("--vault", vault, "doctor", "--json", expect=1).stdout)


def test_the_live_queue_retries_a_failed_sync_until_the_cause_is_gone(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "a.md", "# A\n\nThe apricot.\n")
    settings = make_settings(vault)
    with Memory(settings=settings) as memory:
        memory.sync()
    database = sqlite3.connect(settings.index_dir() / "apus.sqlite")
    with database:
        database.executescript(REFUSE)
    write_note(vault, "b.md", "# B\n\nThe blackberry.\n")

    outcomes: list[SyncFinished] = []
    second_failure = threading.Event()
    recovered = threading.Event()

    def listen(event: MemoryEvent) -> None:
        if not isinstance(event, SyncFinished):
            return
        outcomes.append(event)
        failures = [o for o in outcomes if o.failed]
        if len(failures) == 2:
            second_failure.set()
        if event.report is not None and failures:
            recovered.set()

    with Memory(settings=settings) as memory:
        memory.subscribe(listen)
        # Tiny delays: the count of attempts is what is checked, not how long they took.
        memory.start_live(watch=False, backoff=Backoff(first=0.01, longest=0.05))
        assert second_failure.wait(60), outcomes
        last = memory.last_sync
        assert last is not None and not last.ok and "injected: no writes" in (last.error or "")
        assert last.failures >= 2
        with database:
            database.execute("DROP TRIGGER refuse")
        database.close()
        assert recovered.wait(60), outcomes
        assert memory.last_sync is not None and memory.last_sync.ok
        assert memory.syncs is not None and memory.syncs.failures == 0
        # One request, no change on disk after it: every run after the first was a retry.
        assert len(outcomes) >= 3 and all(o.failed for o in outcomes[:-1])
    assert search_paths(settings, "blackberry") == ["b.md"]
