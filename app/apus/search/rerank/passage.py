"""The passage a reranker reads of a chunk: its heading line and the part of its text that
holds the query's words, cut to the model's budget."""

from __future__ import annotations

from bisect import bisect_left

from apus.index.store import ChunkRecord
from apus.vault.annotations import without_annotations
from apus.vault.text import TextTerms

# Characters a model token stands for, to choose the window before the tokenizer cuts it
# exactly: English prose is about 4 a WordPiece token, and a window a little long only
# loses its tail to the cut.
CHARS_PER_TOKEN = 5
# Whether the chunk's title and heading lead the passage.
WITH_HEADING = True
# Whether a chunk longer than the budget is read where the query's words are (else from
# its start).
BEST_WINDOW = True


def passage_text(chunk: ChunkRecord, terms: frozenset[str], tokens: int) -> str:
    """What the model reads of `chunk` for a query of `terms`, about `tokens` long."""
    body = without_annotations(chunk.text).strip()
    head = _heading_line(chunk) if WITH_HEADING else ""
    budget = max(1, tokens * CHARS_PER_TOKEN - len(head))
    if len(body) > budget:
        start = _best_start(body, terms, budget) if BEST_WINDOW else 0
        body = body[start : start + budget]
    return f"{head}\n{body}" if head else body


def _heading_line(chunk: ChunkRecord) -> str:
    """The note's title and the chunk's heading path, once each, unless the text opens
    with them already."""
    parts = [part for part in (chunk.title, chunk.heading) if part]
    line = " / ".join(dict.fromkeys(parts))
    return "" if not line or chunk.text.lstrip("# ").startswith(line) else line


def _best_start(text: str, terms: frozenset[str], width: int) -> int:
    """The line start from which `width` characters hold the most distinct query terms
    (the text's start when none does): a passage of many short paragraphs is read from
    the one that answers, not from its top."""
    found = TextTerms(text)
    matches = found.spans(terms)
    if not matches:
        return 0
    starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n" and i + 1 < len(text)]
    spans = [(start, text[start:end].lower()) for start, end in matches]
    positions = [start for start, _ in spans]
    best, best_count = 0, -1
    for line_start in starts:
        first = bisect_left(positions, line_start)
        last = bisect_left(positions, line_start + width)
        count = len({word for _, word in spans[first:last]})
        if count > best_count:
            best, best_count = line_start, count
    return best
