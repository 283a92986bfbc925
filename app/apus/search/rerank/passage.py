"""The passage a reranker reads of a chunk: its heading line and the part of its text that
holds the query's words, cut to the model's budget."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

from apus.index.store import ChunkRecord
from apus.vault.annotations import without_annotations
from apus.vault.text_terms import TextTerms

# Characters a model token stands for, to choose the window before the tokenizer cuts it
# exactly: English prose is about 4 a WordPiece token, and a window a little long only
# loses its tail to the cut.
CHARS_PER_TOKEN = 5
# Whether the chunk's title and heading lead the passage.
WITH_HEADING = True
# Whether a chunk longer than the budget is read where the query's words are (else from
# its start).
BEST_WINDOW = True
_LINE_END = re.compile(r"\n(?=.)", re.S)


def passage_text(chunk: ChunkRecord, terms: frozenset[str], tokens: int) -> str:
    """What the model reads of `chunk` for a query of `terms`, about `tokens` long."""
    body = without_annotations(chunk.text).strip()
    head = _heading_line(chunk) if WITH_HEADING else ""
    budget = max(1, tokens * CHARS_PER_TOKEN - (len(head) + 1 if head else 0))
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
    """The start of a line holding a query word from which `width` characters hold the
    most distinct query words (the earliest such line; the text's start when none holds
    one): a passage of many short paragraphs is read from the one that answers."""
    matches = TextTerms(text).spans(terms)
    if not matches:
        return 0
    starts = [0] + [line.end() for line in _LINE_END.finditer(text)]
    positions = [start for start, _ in matches]
    words = [text[start:end].lower() for start, end in matches]
    best, best_count = 0, 0
    for position in positions:
        line_start = starts[bisect_right(starts, position) - 1]
        first = bisect_left(positions, line_start)
        last = bisect_left(positions, line_start + width)
        count = len(set(words[first:last]))
        if count > best_count:
            best, best_count = line_start, count
    return best
