"""The store's names table: the notes a query names by path, file name or stem, kept in step
with every write, backfilled for a store made before it existed, read by the search."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from apus.index.file_names import name_keys
from apus.index.schema import MIGRATIONS, SCHEMA_VERSION
from apus.index.store import Store
from support.vaults import make_settings, open_store, search_paths, sync, write_note


def _named(store: Store, key: str) -> set[str]:
    ids = set(store.files_named(key))
    return {path for path, record in store.files().items() if record.id in ids}


def _table_rows(db_path: Path) -> set[tuple[str, int]]:
    db = sqlite3.connect(db_path)
    try:
        return {(str(key), int(file_id)) for key, file_id in db.execute("SELECT * FROM file_names")}
    finally:
        db.close()


def _expected_rows(store: Store) -> set[tuple[str, int]]:
    """What folding every stored path gives: the table must hold exactly that."""
    return {(key, r.id) for path, r in store.files().items() for key in name_keys(path)}


def test_writes_renames_and_deletes_keep_the_names_in_step(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "Projects/Roadmap.md", "# Roadmap\n\nShip it.\n")
    write_note(vault, "notes/roadmap.markdown", "the other roadmap\n")
    write_note(vault, "Café/Menü.md", "# Menu\n\nSoup.\n")
    write_note(vault, "gone.md", "short-lived\n")
    settings = make_settings(vault)
    sync(settings)
    store = open_store(settings)
    try:
        assert _named(store, "roadmap") == {"Projects/Roadmap.md", "notes/roadmap.markdown"}
        assert _named(store, "roadmap.md") == {"Projects/Roadmap.md"}
        assert _named(store, "projects/roadmap.md") == {"Projects/Roadmap.md"}
        assert _named(store, "cafe/menu.md") == {"Café/Menü.md"}  # folded like a query
        assert _named(store, "menu") == {"Café/Menü.md"}
    finally:
        store.close()

    os.rename(vault / "Projects" / "Roadmap.md", vault / "Projects" / "Plan.md")
    (vault / "gone.md").unlink()
    write_note(vault, "notes/roadmap.markdown", "the other roadmap, edited\n")
    report = sync(settings)
    assert (report.renamed, report.removed, report.changed) == (1, 1, 1)

    store = open_store(settings)
    try:
        assert _named(store, "roadmap") == {"notes/roadmap.markdown"}
        assert _named(store, "plan") == {"Projects/Plan.md"}
        assert _named(store, "gone") == set()
        # No name of a moved, rewritten or deleted file is left behind.
        assert _table_rows(store.path) == _expected_rows(store)
    finally:
        store.close()
    assert search_paths(settings, "plan")[0] == "Projects/Plan.md"


def _downgrade_to_3(db_path: Path) -> None:
    """Make the database what Apus left at schema 3: the names table (4) and the notes'
    language (5) gone."""
    db = sqlite3.connect(db_path)
    try:
        db.executescript(
            "DROP TABLE file_names;\n"
            "ALTER TABLE files DROP COLUMN lang;\n"
            "PRAGMA user_version = 3;\n"
        )
    finally:
        db.close()


def test_a_store_made_before_the_names_table_is_backfilled(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for index in range(30):
        write_note(vault, f"topic-{index}/note-{index}.md", f"# Note {index}\n\nword{index}\n")
    settings = make_settings(vault)
    sync(settings)
    db_path = settings.index_dir() / Store.FILENAME
    assert len(MIGRATIONS) == SCHEMA_VERSION
    _downgrade_to_3(db_path)

    # A reader never migrates: until a writer opens the store, names are folded from paths.
    reader = Store(settings.index_dir(), readonly=True)
    try:
        assert _named(reader, "note-7") == {"topic-7/note-7.md"}
    finally:
        reader.close()
    assert search_paths(settings, "note-7.md")[0] == "topic-7/note-7.md"

    writer = Store(settings.index_dir())  # migrates 3 -> 4 (filling the table) -> current
    try:
        assert writer.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert _table_rows(db_path) == _expected_rows(writer)
        assert _named(writer, "topic-7/note-7.md") == {"topic-7/note-7.md"}
    finally:
        writer.close()
    assert search_paths(settings, "note-12")[0] == "topic-12/note-12.md"
