"""A damaged index: said clearly by every command, and repaired from the notes.

The SQLite store is derived from the notes, so a damaged one is never a dead end: reading
it says what happened and the fix, and `apus memory index --force` moves it aside (kept,
for a look) and builds a new one.
"""

from __future__ import annotations

import os
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from apus.index.set_aside import recorded_set_aside, set_aside_if_damaged
from apus.index.store import Store
from support.vaults import index_vault, make_settings, run_apus, run_json, vault_digest, write_note

BIRDS = ("heron", "egret", "ibis", "stork", "crane", "bittern", "plover", "curlew", "dunlin")


def _vault(root: Path, notes: int = 150) -> Path:
    rng = random.Random(7)
    for number in range(notes):
        body = " ".join(rng.choice(BIRDS) for _ in range(300))
        write_note(root, f"notes/n{number:03d}.md", f"# Note {number}\n\nmarker{number} {body}\n")
    return root


def _index_dir(vault: Path) -> Path:
    return make_settings(vault).index_dir()


def _truncate(db: Path) -> None:
    os.truncate(db, db.stat().st_size // 2)


def _garble(db: Path, offset: int) -> None:
    with open(db, "r+b") as handle:
        handle.seek(offset)
        handle.write(random.Random(offset).randbytes(4096))


def _garble_header(db: Path) -> None:
    _garble(db, 0)


def _garble_middle_page(db: Path) -> None:
    pages = db.stat().st_size // 4096
    _garble(db, (pages // 2) * 4096)


def _checkpointed(vault: Path) -> Path:
    """The database file with everything in it (no WAL), as after a clean shutdown."""
    db = _index_dir(vault) / Store.FILENAME
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return db


def _assert_clean_error(result_stderr: str) -> None:
    assert "Traceback" not in result_stderr, result_stderr
    lines = result_stderr.strip().splitlines()
    assert lines[0].startswith("Error: The index database "), result_stderr
    assert "is damaged" in lines[0]
    assert lines[1].startswith("Fix: apus memory index --force"), result_stderr


@pytest.mark.parametrize("force", [(), ("--force",)], ids=["index", "index-force"])
@pytest.mark.parametrize(
    "damage", [_truncate, _garble_header], ids=["truncated-to-half", "garbage-header"]
)
def test_a_damaged_store_is_reported_then_rebuilt(
    tmp_path: Path, damage: Callable[[Path], None], force: tuple[str, ...]
) -> None:
    vault = _vault(tmp_path / "vault")
    index_vault(vault)
    damage(_checkpointed(vault))
    before = vault_digest(vault)

    for command in (
        ("memory", "status"),
        ("memory", "search", "marker7"),
        ("memory", "recall", "marker7"),
    ):
        result = run_apus("--vault", vault, *command, expect=1)
        _assert_clean_error(result.stderr)

    # Damage this plain shows up as soon as the database opens: any index run repairs it.
    run_apus("--vault", vault, "memory", "index", *force)

    found = run_json("--vault", vault, "memory", "search", "--json", "marker7")
    assert [hit["path"] for hit in found["results"]] == ["notes/n007.md"]
    assert run_json("--vault", vault, "memory", "status", "--json")["files"] == 150
    index_dir = _index_dir(vault)
    [kept] = [p for p in index_dir.iterdir() if p.name.startswith("apus.sqlite.damaged-")]
    store = Store(index_dir, readonly=True)
    try:
        set_aside = recorded_set_aside(store)
    finally:
        store.close()
    assert set_aside is not None and set_aside.moved_to == kept
    assert vault_digest(vault) == before


def test_a_garbled_middle_page_is_found_by_force_and_repaired(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    index_vault(vault)
    _garble_middle_page(_checkpointed(vault))

    # Whether a command meets the page depends on what it reads; it never gets a traceback.
    for command in (("memory", "status"), ("memory", "search", "marker7")):
        result = run_apus("--vault", vault, *command, expect=None)
        if result.returncode != 0:
            _assert_clean_error(result.stderr)

    run_apus("--vault", vault, "memory", "index", "--force")

    index_dir = _index_dir(vault)
    assert [p for p in index_dir.iterdir() if p.name.startswith("apus.sqlite.damaged-")]
    connection = sqlite3.connect(index_dir / Store.FILENAME)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        connection.close()
    for number in (0, 75, 149):
        found = run_json("--vault", vault, "memory", "search", "--json", f"marker{number}")
        assert [hit["path"] for hit in found["results"]] == [f"notes/n{number:03d}.md"]


def test_force_keeps_a_healthy_store(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault", notes=5)
    index_vault(vault)
    index_dir = _index_dir(vault)
    assert set_aside_if_damaged(index_dir, thorough=True) is None
    run_apus("--vault", vault, "memory", "index", "--force")
    assert not [p for p in index_dir.iterdir() if ".damaged-" in p.name]


def test_set_aside_moves_the_journal_files_with_the_database(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    store = Store(index_dir)
    store.close()
    db = index_dir / Store.FILENAME
    for suffix in ("-wal", "-shm"):
        (index_dir / (Store.FILENAME + suffix)).write_bytes(b"")
    _garble_header(db)

    moved = set_aside_if_damaged(index_dir)

    assert moved is not None and "not a database" in moved.reason
    assert {p.name for p in index_dir.iterdir()} >= {
        moved.moved_to.name,
        moved.moved_to.name + "-wal",
        moved.moved_to.name + "-shm",
        Store.FILENAME,
    }
    fresh = Store(index_dir, readonly=True)
    try:
        assert fresh.counts() == (0, 0)
        assert recorded_set_aside(fresh) == moved
    finally:
        fresh.close()
