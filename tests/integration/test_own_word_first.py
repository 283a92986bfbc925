"""The agent's own word first: an entry written to MEMORY.md that answers a question, asked
later in the user's own words, outranks documents that only share those words."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from apus.config import Settings
from apus.memory import Memory
from apus.memory.writer import Entry
from apus.search.options import SearchOptions
from support.vaults import make_settings, write_note

DOCS = {
    "docs/restic.md": "# restic\n\n> Back up files to a folder, a NAS or the cloud; each back "
    "up is a snapshot.\n\n- Back up a folder every night:\n\n`restic backup {{path}}`\n",
    "docs/rsync.md": "# rsync\n\n> Copy files to a home server over SSH.\n\n- Back up the home "
    "folder to a server:\n\n`rsync -a ~ {{server}}:backup`\n",
    "docs/cron.md": "# cron\n\n> Run a job every night on a server.\n",
    "docs/borg.md": "# borg\n\n> Deduplicating back up tool for servers.\n",
}
DECISION = (
    "Decided: nightly backups of the home server go to the NAS with restic; rsync is only "
    "for one-off copies."
)
QUESTION = "what do we use to back up the home server every night?"


def _memory(vault: Path, **flags: object) -> Memory:
    settings: Settings = make_settings(vault, memory__write__enabled=True, **flags)
    return Memory(settings=settings)


def test_a_decision_outranks_documents_that_share_its_words(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for rel, text in DOCS.items():
        write_note(vault, rel, text)
    with _memory(vault) as memory:
        memory.write(Entry(DECISION, "MEMORY.md", 8), dt.datetime(2026, 5, 1, 9, 0))
        memory.write(Entry("Sam takes tea without sugar.", "MEMORY.md"), dt.datetime(2026, 5, 2))
        assert memory.settings.search.query.curated_weight > 1
        hits = memory.search(QUESTION, SearchOptions(mode="keyword")).hits
    assert hits[0].path == "MEMORY.md" and "restic" in hits[0].snippet
    # The entry alone, not its neighbour: each entry is a passage of its own.
    assert "sugar" not in hits[0].snippet
    # Without the preference, the documents that share the question's words come first.
    with _memory(vault, memory__search__query__curatedWeight=1.0) as memory:
        plain = [hit.path for hit in memory.search(QUESTION, SearchOptions(mode="keyword")).hits]
    assert plain[0] != "MEMORY.md"
