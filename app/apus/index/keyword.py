"""The Whoosh BM25F keyword index, derived from the SQLite store and stamped with its generation."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import posixpath
import shutil
import threading
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from whoosh import index as whoosh_index
from whoosh.analysis.acore import Token
from whoosh.analysis.tokenizers import Tokenizer
from whoosh.columns import NumericColumn
from whoosh.fields import COLUMN, TEXT, Schema
from whoosh.filedb.filestore import FileStorage
from whoosh.formats import Format, tokens
from whoosh.reading import IndexReader

from apus.index.bm25 import (
    Bm25Params,
    SegmentCache,
    Statistics,
    collect_statistics,
    read_numbers,
    segment_id,
    top_scores,
)
from apus.index.fileswap import exchange
from apus.index.sqlite import IndexWriteError
from apus.index.store import ChunkRecord, Store
from apus.vault.text import ANALYZER_VERSION, keyword_term, keyword_terms, tokenize

if TYPE_CHECKING:  # a search never loads Whoosh's writers
    from whoosh.writing import IndexWriter

STAMP_FILE = "apus-stamp.json"
# A build gathers up to this many postings in memory (about 9 bytes each, and about 30 more
# for the largest field's while a segment is written) before it writes them as a segment:
# one segment, which a search reads term by term once, up to about 160k chunks of notes
# like tldr's pages (48 postings a chunk); memory stays bounded beyond.
_SEGMENT_POSTINGS = 8_000_000
# Whoosh's writer (an update in place) sorts postings in memory up to this.
_UPDATE_POOL_MB = 128


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


def _schema() -> Schema:
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


def _documents(chunks: Iterable[ChunkRecord]) -> Iterator[KeywordDocument]:
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


def search_terms(terms: Iterable[str]) -> list[str]:
    """The index terms for folded query terms (their stems), each once."""
    return list(dict.fromkeys(keyword_term(term) for term in terms))


@dataclass(frozen=True)
class KeywordState:
    usable: bool  # opens and is from the current analyzer
    generation: int | None  # the store generation it reflects, None when unknown
    reason: str  # why it is not usable/current ("" when fine)


_INDEX_NAME = "MAIN"  # Whoosh's default, which open_dir and create_in use


class KeywordIndex:
    """Owns the `keyword/` Whoosh directory of one vault index."""

    DIRNAME = "keyword"

    def __init__(self, index_dir: Path) -> None:
        self.dir = index_dir / self.DIRNAME
        self._lock = threading.Lock()
        self._ix: whoosh_index.Index | None = None
        self._reader: IndexReader | None = None
        self._reader_generation: int | None = None
        self._mapped = False  # whether the open reader's files are memory-mapped
        self._segments = SegmentCache()
        self._statistics: Statistics | None = None
        # The index and reader `state(keep_open=True)` checked, until a search takes them.
        self._checked: tuple[whoosh_index.Index, IndexReader] | None = None

    # -- state ------------------------------------------------------------------------

    def state(self, *, keep_open: bool = False) -> KeywordState:
        """Whether the index opens and is current. With `keep_open` (a searcher about to
        search it) the reader opened to check it is kept for the next search, which would
        otherwise open every segment again."""
        stamp = self._read_stamp(self.dir)
        if stamp is None:
            return KeywordState(False, None, "keyword index missing")
        if stamp.get("analyzer") != ANALYZER_VERSION:
            return KeywordState(False, None, "keyword analyzer changed")
        if stamp.get("format", 1) != KEYWORD_FORMAT:
            return KeywordState(False, None, "keyword index format changed")
        try:
            ix = self._open(mapped=False)
            reader = ix.reader()
            reader.doc_count()
        except Exception as exc:  # Whoosh raises many types for damaged files
            return KeywordState(False, None, f"keyword index damaged ({type(exc).__name__})")
        if keep_open:
            with self._lock:
                self._close_checked()
                # The next search reads what was just checked: an index rewritten at the same
                # generation (a repair swaps the folder) is never read from the old files.
                self._close_reader()
                self._checked = (ix, reader)
        else:
            reader.close()
            ix.close()
        return KeywordState(True, int(stamp.get("generation", -1)), "")

    def stamp_signature(self) -> int | None:
        """Changes whenever the index is rewritten (the stamp is replaced last)."""
        try:
            return (self.dir / STAMP_FILE).stat().st_mtime_ns
        except OSError:
            return None

    @staticmethod
    def _read_stamp(directory: Path) -> dict[str, int] | None:
        try:
            text = (directory / STAMP_FILE).read_text(encoding="utf-8")
            stamp: dict[str, int] = json.loads(text)
            return stamp
        except (OSError, ValueError):
            return None

    @staticmethod
    def _write_stamp(directory: Path, generation: int) -> None:
        tmp = directory / (STAMP_FILE + ".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(
                {"generation": generation, "analyzer": ANALYZER_VERSION, "format": KEYWORD_FORMAT},
                handle,
            )
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, directory / STAMP_FILE)

    # -- writing ------------------------------------------------------------------------

    def rebuild(
        self,
        store: Store,
        *,
        cancel: threading.Event | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Build a fresh index from the store in a shadow folder, then swap it in.

        Raises IndexWriteError when the folder cannot be written (a full disk): the shadow
        is removed and the index in place is left as it was.
        """
        generation = store.generation()
        _, total = store.counts()
        shadow = self.dir.with_name(self.DIRNAME + ".new")
        shutil.rmtree(shadow, ignore_errors=True)
        done = 0
        try:
            shadow.mkdir(parents=True)
            ix = whoosh_index.create_in(str(shadow), _schema())
            try:
                # Closed at once when stopped: the segment being written is abandoned.
                with contextlib.closing(
                    _write_segments(ix, _documents(store.iter_chunks()))
                ) as taken:
                    for _ in taken:
                        if cancel is not None and cancel.is_set():
                            raise InterruptedError("keyword rebuild cancelled")
                        done += 1
                        if progress is not None and done % 1000 == 0:
                            progress(done, total)
            finally:
                ix.close()
            self._write_stamp(shadow, generation)
            self._swap_in(shadow)
        except BaseException as exc:
            shutil.rmtree(shadow, ignore_errors=True)
            if isinstance(exc, OSError) and not isinstance(exc, InterruptedError):
                raise _write_error(self.dir, exc) from exc
            raise
        if progress is not None:
            progress(done, total)

    def _swap_in(self, shadow: Path) -> None:
        with self._lock:
            self._close_reader()
            # One atomic exchange where the system has one: a reader never finds the folder
            # missing (the two renames below leave a moment where it is).
            if self.dir.exists() and exchange(shadow, self.dir):
                shutil.rmtree(shadow, ignore_errors=True)  # the old index, now at `shadow`
                return
            old = self.dir.with_name(self.DIRNAME + ".old")
            shutil.rmtree(old, ignore_errors=True)
            if self.dir.exists():
                os.replace(self.dir, old)
            os.replace(shadow, self.dir)
            shutil.rmtree(old, ignore_errors=True)

    def apply(
        self,
        *,
        remove_file_ids: Iterable[int],
        add_chunks: Iterable[ChunkRecord],
        generation: int,
    ) -> None:
        """Apply one committed store change: drop files' chunks, add new ones, stamp."""
        ix = whoosh_index.open_dir(str(self.dir))
        writer = ix.writer(limitmb=_UPDATE_POOL_MB)
        try:
            _delete_notes(writer, remove_file_ids)
            for document in _documents(add_chunks):
                writer.add_document(**document.fields())
            writer.commit()
        except BaseException:
            writer.cancel()
            raise
        finally:
            ix.close()
        self._write_stamp(self.dir, generation)

    def grow(self, *, add_chunks: Iterable[ChunkRecord], generation: int) -> None:
        """Add the chunks of notes new to the index as segments of their own, stamp: what a
        first index does with each stretch of notes it commits (no segment is read again)."""
        ix = whoosh_index.open_dir(str(self.dir))
        try:
            for _ in _write_segments(ix, _documents(add_chunks)):
                pass
        finally:
            ix.close()
        self._write_stamp(self.dir, generation)

    # -- searching ----------------------------------------------------------------------

    def search(
        self,
        terms: list[str],
        limit: int,
        generation: int,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """Chunk ids and BM25F scores (see `apus.index.bm25`) for chunks matching any of the
        folded terms (among `allowed` chunk ids, when given)."""
        if not terms:
            return []
        with self._lock:
            reader, statistics = self._current_reader(generation)
            top = top_scores(reader, search_terms(terms), limit, statistics, PARAMS, allowed)
            return [(int(statistics.ids[doc]), score) for doc, score in top]

    def _current_reader(self, generation: int) -> tuple[IndexReader, Statistics]:
        if (
            self._reader is not None
            and self._statistics is not None
            and self._reader_generation == generation
        ):
            if not self._mapped:
                self._map_reader()
            return self._reader, self._statistics
        self._close_reader()
        if self._checked is not None:
            (self._ix, self._reader), self._checked = self._checked, None
        else:
            self._ix = self._open(mapped=False)
            self._reader = self._ix.reader()
        self._mapped = False
        self._reader_generation = generation
        self._segments.keep_only(self._reader)
        self._statistics = collect_statistics(self._reader, PARAMS, self._segments)
        return self._reader, self._statistics

    def _open(self, *, mapped: bool) -> whoosh_index.Index:
        """The index, its segment files memory-mapped or read as needed.

        Whoosh copies every mapped file's bytes when a reader opens them (24 ms at 40k
        chunks, 70 at 120k), then answers each query about a third sooner than from reads.
        So a generation's first search reads the files, which is all a one-shot command
        does; its second search maps them, for the searches that follow in a session."""
        storage = FileStorage(str(self.dir), supports_mmap=mapped)
        return whoosh_index.FileIndex(storage, indexname=_INDEX_NAME)

    def _map_reader(self) -> None:
        """Replace the read-as-needed reader with a mapped one over the same segments (the
        statistics stay: they are per document of those segments)."""
        assert self._reader is not None and self._ix is not None
        ix = self._open(mapped=True)
        reader = ix.reader()
        if _segment_ids(reader) != _segment_ids(self._reader):
            # Rewritten since (a writer of another process): the next check reopens it.
            reader.close()
            ix.close()
            self._mapped = True  # not again for this generation
            return
        self._reader.close()
        self._ix.close()
        self._ix, self._reader, self._mapped = ix, reader, True

    def _close_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self._ix is not None:
            self._ix.close()
        self._reader = None
        self._ix = None
        self._reader_generation = None
        self._statistics = None

    def _close_checked(self) -> None:
        if self._checked is not None:
            ix, reader = self._checked
            reader.close()
            ix.close()
            self._checked = None

    def close(self) -> None:
        with self._lock:
            self._close_reader()
            self._close_checked()


def _write_segments(
    ix: whoosh_index.Index, documents: Iterable[KeywordDocument]
) -> Generator[KeywordDocument, None, None]:
    """Write `documents` into `ix` as new segments (one per `_SEGMENT_POSTINGS` postings),
    yielding each once it is taken, so the caller can count or stop between documents."""
    from apus.index.keyword_segment import SegmentBuilder  # the write path's alone

    builder: SegmentBuilder | None = None
    try:
        for document in documents:
            if builder is None:
                builder = SegmentBuilder(ix)
            builder.add_terms(document.terms, {"chunk": document.chunk, "note": document.note})
            yield document
            if builder.postings() >= _SEGMENT_POSTINGS:
                full, builder = builder, None
                full.finish()
        if builder is not None:
            last, builder = builder, None
            last.finish()
    except BaseException:
        if builder is not None:
            builder.abandon()
        raise


def _delete_notes(writer: IndexWriter, file_ids: Iterable[int]) -> None:
    """Mark the documents of these notes deleted, found by the note column of each segment.

    Each segment's first posting list is read as well: the column alone would not show
    damaged postings, and a failure here is what makes the sync rebuild a damaged index
    that an update in place is the first to touch."""
    wanted = np.fromiter(file_ids, dtype=np.int64)
    if not len(wanted):
        return
    reader = writer.reader()
    try:
        for leaf, offset in reader.leaf_readers():
            _read_first_postings(leaf)
            notes = read_numbers(leaf, PARAMS.note_field)
            for docnum in np.flatnonzero(np.isin(notes, wanted)):
                writer.delete_document(offset + int(docnum))
    finally:
        reader.close()


def _read_first_postings(leaf: IndexReader) -> None:
    """Read the first block of a segment's first posting list (Whoosh raises if damaged)."""
    for field, term in leaf.all_terms():
        matcher = leaf.postings(field, term)
        if matcher.is_active():
            matcher.id()
        return


def _write_error(folder: Path, exc: OSError) -> IndexWriteError:
    """What a failed keyword rebuild means for the user (the error Whoosh met, not its own)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return IndexWriteError(
            f"The disk holding the index {folder.parent} is full (rebuilding the keyword index).",
            "free some space on it, then run the same command again (what was indexed is kept)",
        )
    return IndexWriteError(
        f"The keyword index {folder} cannot be written ({exc.strerror or exc}).",
        f"check that {folder.parent} is a folder you can write to on a working disk",
    )


def _segment_ids(reader: IndexReader) -> list[str]:
    return [segment_id(leaf) for leaf, _ in reader.leaf_readers()]
