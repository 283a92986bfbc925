"""A note of entries (MEMORY.md, USER.md, the notes under memory/) is chunked one entry a
passage: no entry shares a passage, or a vector, with its neighbours."""

from __future__ import annotations

from apus.vault.chunk import chunk_note
from apus.vault.markdown import parse_note
from apus.vault.memory_notes import is_entry_note

ENTRIES = (
    "# Memory\n\n"
    "## 2026-03-16 09:05\n<!-- importance: 8 -->\nDecided: the team vault syncs with Obsidian "
    "Sync, not iCloud.\n\n"
    "## 2026-03-26 09:06\nDecided: nightly backups go to the NAS with restic.\n\n"
    "## 2026-04-05 09:08\nSam prefers tea without sugar.\n"
)


def test_each_entry_is_a_passage_of_its_own() -> None:
    note = parse_note(ENTRIES, fallback_title="MEMORY")
    packed = chunk_note(note)
    assert len(packed) == 1  # 400 tokens hold every entry
    entries = chunk_note(note, entries=True)
    assert [chunk.text.splitlines()[0] for chunk in entries] == [
        "# Memory",
        "## 2026-03-26 09:06",
        "## 2026-04-05 09:08",
    ]
    assert "Obsidian" in entries[0].text and "restic" not in entries[0].text
    assert [(c.start_line, c.end_line) for c in entries] == [(1, 5), (7, 8), (10, 11)]


def test_which_notes_hold_entries() -> None:
    for path in ("MEMORY.md", "USER.md", "memory/2026-11-20.md", "memory/notes.md"):
        assert is_entry_note(path), path
    for path in ("notes/MEMORY.md", "docs/memory.md", "memory.md", "projects/plan.md"):
        assert not is_entry_note(path), path
