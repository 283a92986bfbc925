"""Trigger recall: match a message against the `triggers` of the trusted notes only.

Only root `MEMORY.md` and `USER.md` qualify (see `apus.index.triggers`); daily notes and
imports stay behind explicit search. Trigger vectors are embedded at index time, so recall
costs at most one query embedding and no other model call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from apus.index.store import ChunkRecord, FileRecord, Store
from apus.index.triggers import trigger_text, triggers_of, trusted_files
from apus.search.snippet import make_snippet
from apus.vault.annotations import entry_span, without_annotations
from apus.vault.text import tokenize

# What only a recall by meaning needs is imported when an embedder is given: Claude Code's hook
# recalls by words in a short process of its own, where numpy's import would cost a third.
if TYPE_CHECKING:
    import numpy as np

    from apus.embed.base import Embedder

MAX_ENTRIES = 3
# Strong match, hybrid: 0.7·cosine + 0.3·coverage. A paraphrase of a trigger scores about
# 0.7+ with EmbeddingGemma while an unrelated message stays under 0.5.
STRONG_HYBRID = 0.62
# Strong match, keyword only: nearly every word of the trigger must be in the message.
STRONG_KEYWORD = 0.75


@dataclass(frozen=True)
class RecallEntry:
    path: str
    trigger: str
    score: float
    keyword: float  # share of the trigger's words found in the message
    vector: float | None  # cosine between message and trigger, None when not embedded
    start_line: int
    end_line: int
    snippet: str


def recall(
    store: Store,
    message: str,
    *,
    embedder: Embedder | None = None,
    vector_weight: float | None = None,
) -> list[RecallEntry]:
    """Up to three trigger entries of MEMORY.md / USER.md that match `message`; a trigger's
    cosine and its word coverage are mixed by `vector_weight` (None: 0.7, meaning first)."""
    if vector_weight is None:
        vector_weight = 0.7
    message_terms = {token.term for token in tokenize(message)}
    if not message_terms:
        return []
    query_vector: np.ndarray | None = None
    identity = None
    if embedder is not None:
        import numpy as np

        from apus.index.vectors import cache_key

        # Embed first: a remote embedder learns its width from this call, so asking for the
        # identity afterwards costs no separate probe request.
        query_vector = embedder.embed([embedder.query_text(message)], kind="query")[0]
        identity = embedder.identity
    entries: list[RecallEntry] = []
    for record in trusted_files(store):
        for trigger, passage in triggers_of(store, record):
            terms = {token.term for token in tokenize(trigger)}
            coverage = len(terms & message_terms) / len(terms) if terms else 0.0
            cosine: float | None = None
            if query_vector is not None and identity is not None and embedder is not None:
                key = cache_key(identity, trigger_text(embedder, trigger))
                vector = store.cached_vectors([key]).get(key)
                if vector is not None:
                    cosine = float(np.dot(query_vector, vector))
            if cosine is None:
                score, strong = coverage, coverage >= STRONG_KEYWORD
            else:
                score = vector_weight * max(cosine, 0.0) + (1 - vector_weight) * coverage
                strong = score >= STRONG_HYBRID or coverage >= 0.999
            if strong and (
                entry := _entry(
                    store, record, trigger, score, coverage, cosine, message_terms, passage
                )
            ):
                entries.append(entry)
    entries.sort(key=lambda e: e.score, reverse=True)
    # One entry per passage: two triggers pointing at the same section say the same thing.
    unique: dict[tuple[str, int], RecallEntry] = {}
    for entry in entries:
        unique.setdefault((entry.path, entry.start_line), entry)
    return list(unique.values())[:MAX_ENTRIES]


def _entry(
    store: Store,
    record: FileRecord,
    trigger: str,
    score: float,
    coverage: float,
    cosine: float | None,
    message_terms: set[str],
    passage: ChunkRecord | None = None,
) -> RecallEntry | None:
    """The file's chunk sharing most words with the trigger (then the message), compacted.

    The trigger decides: a message matching several triggers contains all their words, and
    ranking chunks by the message alone would send every trigger to the same passage. None
    when the file has no body (only frontmatter): there is no passage to show.
    """
    trigger_terms = frozenset(t.term for t in tokenize(trigger))
    wanted = frozenset(message_terms | trigger_terms)

    def overlap(chunk: ChunkRecord) -> tuple[int, int]:
        terms = {t.term for t in tokenize(chunk.text)}
        return len(trigger_terms & terms), len(wanted & terms)

    # An entry's own trigger points at its entry; a note's, at its best-matching passage.
    chunk = passage or max(store.iter_chunks([record.id]), key=overlap, default=None)
    if chunk is None:
        return None
    text, start_line, end_line = chunk.text, chunk.start_line, chunk.end_line
    span = entry_span(text, trigger) if passage is not None else None
    if span is not None:  # the entry itself, not the neighbours its passage holds
        first, last = span
        text = "\n".join(text.splitlines()[first : last + 1])
        start_line, end_line = chunk.start_line + first, chunk.start_line + last
    snippet = make_snippet(without_annotations(text), wanted, width=200)
    return RecallEntry(
        path=record.path,
        trigger=trigger,
        score=round(score, 4),
        keyword=round(coverage, 4),
        vector=None if cosine is None else round(cosine, 4),
        start_line=start_line,
        end_line=end_line,
        snippet=snippet.text,
    )
