"""Which notes are notes of entries: the agent's memory, written entry by entry.

Root `MEMORY.md` and `USER.md` (the curated memory) and the notes under `memory/` (the daily
notes the write tool appends to) hold entries, each under a heading of its own. An entry is
one fact, decision or preference: as a passage of its own it is found for what it says,
not diluted by the neighbours a 400-token chunk would pack with it.
"""

from __future__ import annotations

# The curated memory: recall reads their triggers (apus.index.triggers), and ranking weighs
# their passages as the agent's own word (apus.search.chunk_table).
MEMORY_FILES = ("MEMORY.md", "USER.md")
# The folder of daily notes (the write tool's `memory.writer.DAILY_FOLDER`).
DAILY_FOLDER = "memory"


def is_entry_note(rel_path: str) -> bool:
    """Whether the vault-relative note at `rel_path` is written entry by entry."""
    return rel_path in MEMORY_FILES or rel_path.startswith(DAILY_FOLDER + "/")
