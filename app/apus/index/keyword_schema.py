"""What the keyword index holds: its fields and their format, the analyzer, the BM25F
weights, and a chunk as a document of those fields.

Both of the index's writers read it: Whoosh's own (`apus.index.keyword`: updates in place)
and the segment builder of a build (`apus.index.keyword_segment`), which must write byte for
byte the segments Whoosh would.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from whoosh.analysis.acore import Token
from whoosh.analysis.tokenizers import Tokenizer
from whoosh.columns import NumericColumn
from whoosh.fields import COLUMN, TEXT, Schema
from whoosh.formats import Format, tokens

from apus.index.bm25 import Bm25Params
from apus.index.store import ChunkRecord
from apus.vault.text import keyword_term, keyword_terms, tokenize


class ApusTokenizer(Tokenizer):
    """Whoosh tokenizer over `apus.vault.text.tokenize`: folded words (as English stems)
    and CJK bigrams.

    Queries go through the same functions, so NFC/NFD spellings, word forms and partial CJK
    text meet.
    """

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApusTokenizer)

    def __hash__(self) -> int:
        return hash(type(self).__name__)

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize_: bool = True,
        mode: str = "",
        **kwargs: object,
    ) -> Iterator[Token]:
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        for pos, item in enumerate(tokenize(value)):
            token.text = keyword_term(item.term)
            token.boost = 1.0
            token.stopped = False
            if keeporiginal:
                # whoosh's Token declares no `original`, which its own tokenizers set too.
                token.original = value[item.start : item.end]  # type: ignore[attr-defined]
            if positions:
                token.pos = start_pos + pos
            if chars:
                token.startchar = start_char + item.start
                token.endchar = start_char + item.end
            yield token


class TermCounts(Format):
    """A field's postings as weights alone: a posting's weight is how often its term occurs
    in the chunk (what BM25F reads). Whoosh's `Frequency` format repeats that count as a
    value of every posting (4 bytes, pickled and compressed with each block: about 8% of a
    keyword build's CPU), which nothing reads. A term list (what Apus indexes) is counted at
    once, without a Token per term."""

    posting_size = 0  # no value per posting

    def word_values(
        self, value: object, analyzer: object, **kwargs: object
    ) -> Iterator[tuple[Any, int, float, bytes]]:  # the term as text (Whoosh encodes it)
        if isinstance(value, list | tuple):
            counts = Counter(value)
        else:
            counts = Counter(token.text for token in tokens(value, analyzer, kwargs))
        boost = self.field_boost
        return ((term, count, count * boost, b"") for term, count in counts.items())


def _terms_field(analyzer: Tokenizer) -> TEXT:
    """A TEXT field without phrases holding `TermCounts`."""
    field = TEXT(analyzer=analyzer, phrase=False)
    field.format = TermCounts()
    return field


# Bump when the schema or what the fields hold changes: an index in another format is rebuilt.
# 2: BM25F scored here (weights at query time), a note id column, the repeated overlap field.
# 3: the chunk id as a column (read once per segment, not per result).
# 4: no id fields (a term and a posting per chunk and per note, only ever used to delete a
#    note's chunks, which the note column finds); `TermCounts`, no value per posting.
KEYWORD_FORMAT = 4

# A note's name (its path and file name) is evidence apart from its text: a word there
# saturates on its own and adds to the text's score, so a note named for the query is not
# outweighed by notes that merely repeat the word. SciFact has no note names to measure it.
NAME_WEIGHTS = {"path": 1.0, "stem": 2.0}
# A word in the title or a heading says more than one in the body. Measured on SciFact train
# (odd/even query halves), title weights 2-8 are within 0.002 nDCG@10 of each other and
# above 1.0 (by 0.005); saturating the title apart from the body instead costs 0.01-0.03.
TEXT_WEIGHTS = {"title": 4.0, "headings": 2.0, "body": 1.0}
# BM25's classic k1 and b. On SciFact train, tuning on odd queries picks k1 1.5 / b 0.75
# (even queries: 0.683 nDCG@10), tuning on even ones k1 0.9 / b 0.9 (odd: 0.720); this pair
# scores 0.687 / 0.725 on them, inside that plateau.
BM25_K1 = 1.2
BM25_B = 0.75
PARAMS = Bm25Params(
    groups=(NAME_WEIGHTS, TEXT_WEIGHTS),
    k1=BM25_K1,
    b=BM25_B,
    note_field="note",
    id_field="chunk",
    repeated_in={"body": "overlap"},
)


def schema() -> Schema:
    """The fields of the keyword index, and what each holds."""
    analyzer = ApusTokenizer()
    return Schema(
        # The chunk's and its note's ids as columns, read for every document at once: scoring
        # a note whole needs the note of every matching chunk, a result its chunk id, and
        # removing a note the documents of its chunks.
        chunk=COLUMN(NumericColumn("q", default=0)),
        note=COLUMN(NumericColumn("q", default=0)),
        path=_terms_field(analyzer),
        stem=_terms_field(analyzer),
        title=_terms_field(analyzer),
        headings=_terms_field(analyzer),
        body=_terms_field(analyzer),
        # The leading lines a chunk repeats from the one before (its overlap): not searched,
        # subtracted when the note is scored whole so that no line counts twice.
        overlap=_terms_field(analyzer),
    )


@dataclass(frozen=True)
class _NoteTerms:
    """The terms of a note's name fields, analysed once for all of its chunks."""

    file_id: int
    path: list[str]
    stem: list[str]
    title: list[str]


def _note_terms(chunk: ChunkRecord) -> _NoteTerms:
    # Without its extension: every note ends in `.md`, so a query with "md" in it (such as
    # `roadmap.md`) would otherwise match every note through the path field.
    path = posixpath.splitext(chunk.path)[0]
    return _NoteTerms(
        chunk.file_id,
        keyword_terms(path),
        keyword_terms(posixpath.basename(path)),
        keyword_terms(chunk.title),
    )


@dataclass(frozen=True)
class KeywordDocument:
    """A chunk as the keyword index takes it: its ids (columns) and each field's terms."""

    chunk: int
    note: int
    terms: dict[str, list[str]]

    def fields(self) -> dict[str, object]:
        """Whoosh's `add_document` arguments."""
        return {"chunk": self.chunk, "note": self.note, **self.terms}


def documents(chunks: Iterable[ChunkRecord]) -> Iterator[KeywordDocument]:
    """Documents for chunks given in store order (a note's chunks in sequence).

    Fields are given as term lists, which Whoosh indexes as they are: the analysis is the
    same as `ApusTokenizer`'s, but the name fields are analysed once per note, a heading
    once for the chunks that share it, and the body once, its repeated lines (the overlap)
    being a prefix of its terms (no term spans a line break).
    """
    previous: ChunkRecord | None = None
    note: _NoteTerms | None = None
    heading, heading_terms = "", list[str]()
    for chunk in chunks:
        same_note = note is not None and note.file_id == chunk.file_id
        if note is None or not same_note:
            note = _note_terms(chunk)
        if chunk.heading != heading:
            heading, heading_terms = chunk.heading, keyword_terms(chunk.heading)
        overlap = repeated_lines(previous, chunk) if same_note else ""
        overlap_terms = keyword_terms(overlap)
        body_terms = overlap_terms + keyword_terms(chunk.text[len(overlap) :])
        terms = {
            "path": note.path,
            "stem": note.stem,
            "title": note.title,
            "headings": heading_terms,
            "body": body_terms,
            "overlap": overlap_terms,
        }
        yield KeywordDocument(chunk.id, chunk.file_id, terms)
        previous = chunk


def repeated_lines(previous: ChunkRecord | None, chunk: ChunkRecord) -> str:
    """The leading lines of `chunk` that `previous` (the chunk before it in the same note)
    also holds: the chunker repeats whole trailing lines of a chunk at the start of the next.

    A chunk carrying overlap always adds lines of its own, so it spans more lines than it
    repeats; one that does not (a slice of one huge line) repeats nothing.
    """
    if previous is None or not chunk.start_line <= previous.end_line < chunk.end_line:
        return ""
    repeated = previous.end_line - chunk.start_line + 1
    return "\n".join(chunk.text.split("\n")[:repeated])
