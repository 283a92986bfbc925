"""Trigger phrases of the trusted notes, and their vectors made at index time.

Only root `MEMORY.md` and `USER.md` are trusted: the user curates them, so recall may surface
them unasked. Their triggers are embedded while indexing, so recall later costs at most one
query embedding.
"""

from __future__ import annotations

from apus.embed.base import Embedder, EmbeddingIdentity
from apus.index.store import ChunkRecord, FileRecord, Store
from apus.index.vectors import cache_key
from apus.vault.annotations import annotations_in

TRUSTED_FILES = ("MEMORY.md", "USER.md")


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


def embed_triggers(store: Store, embedder: Embedder, identity: EmbeddingIdentity) -> int:
    """Make sure every trusted trigger has a cached vector; returns how many were embedded."""
    texts = [
        trigger_text(embedder, trigger)
        for record in trusted_files(store)
        for trigger, _chunk in triggers_of(store, record)
    ]
    keys = [cache_key(identity, text) for text in texts]
    cached = store.cached_vectors(keys)
    todo = [i for i, key in enumerate(keys) if key not in cached]
    if not todo:
        return 0
    vectors = embedder.embed([texts[i] for i in todo], kind="document")
    with store.transaction():
        store.put_vectors((keys[i], vectors[row]) for row, i in enumerate(todo))
    return len(todo)
