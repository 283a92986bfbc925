"""A new index database gets its whole schema in one commit: a search that opens it while a
first index is creating it sees no schema or the current one, never an early version whose
columns (a file's source, its tags) the searches assume."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from apus.index import store as store_module
from apus.index.schema import SCHEMA_VERSION
from apus.index.store import Store


def test_a_new_database_is_made_at_the_current_schema_in_one_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements: list[str] = []
    real_connect = store_module.connect

    def traced(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
        db = real_connect(path, readonly=readonly)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(store_module, "connect", traced)
    store = Store(tmp_path / "index")
    try:
        versions = [
            s.strip().rstrip(";")
            for s in statements
            if s.strip().startswith("PRAGMA user_version =")
        ]
        # One bump, straight to the current version: no commit leaves an early schema behind.
        assert versions == [f"PRAGMA user_version = {SCHEMA_VERSION}"]
        assert statements.count("COMMIT") >= 1
        columns = {row[1] for row in store.connection.execute("PRAGMA table_info(files)")}
        assert {"source", "tags", "dated"} <= columns
        assert not store.holds_other_sources(["memory"])
    finally:
        store.close()
