"""Trigger phrases of the trusted notes, and the text their vectors are made from.

Only root `MEMORY.md` and `USER.md` are trusted: the user curates them, so recall may surface
them unasked. Their triggers are embedded while indexing (`apus.indexing.embedding`), so
recall later costs at most one query embedding.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apus.index.store import ChunkRecord, FileRecord, Store
from apus.vault.annotations import annotations_in
from apus.vault.memory_notes import MEMORY_FILES

if TYPE_CHECKING:
    from apus.embed.base import Embedder

TRUSTED_FILES = MEMORY_FILES


def trusted_files(store: Store) -> list[FileRecord]:
    return [record for path in TRUSTED_FILES if (record := store.file_by_path(path))]


def triggers_of(store: Store, record: FileRecord) -> list[tuple[str, ChunkRecord | None]]:
    """A trusted note's triggers: its frontmatter's (for the whole note: no passage), then
    each entry's `<!-- triggers: ... -->` with the passage that holds it (the first, when
    a chunk's overlap repeats it)."""
    found: dict[str, ChunkRecord | None] = dict.fromkeys(record.triggers)
    for chunk in store.iter_chunks([record.id]):
        for trigger in annotations_in(chunk.text).triggers:
            found.setdefault(trigger, chunk)
    return list(found.items())


def trigger_text(embedder: Embedder, trigger: str) -> str:
    """Triggers are embedded as short documents, the message as a query."""
    return embedder.document_text(trigger, None)
