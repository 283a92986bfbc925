"""The Whoosh BM25F keyword index, derived from the SQLite store and stamped with its generation."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import threading
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from whoosh import index as whoosh_index
from whoosh.filedb.filestore import FileStorage
from whoosh.reading import IndexReader

from apus.index.bm25 import (
    SegmentCache,
    Statistics,
    collect_statistics,
    read_numbers,
    segment_id,
    top_scores,
)
from apus.index.fileswap import exchange
from apus.index.keyword_schema import KEYWORD_FORMAT, PARAMS, KeywordDocument, documents, schema

# Whoosh pickles the schema into an index's table of contents, naming the analyzer's and the
# format's classes by the module they were defined in: an index made before they moved to
# `keyword_schema` names this one, and opens only while they can be found here too.
from apus.index.keyword_schema import ApusTokenizer as ApusTokenizer
from apus.index.keyword_schema import TermCounts as TermCounts
from apus.index.sqlite import IndexWriteError
from apus.index.store import ChunkRecord, Store
from apus.vault.text import ANALYZER_VERSION, keyword_term

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
            ix = whoosh_index.create_in(str(shadow), schema())
            try:
                # Closed at once when stopped: the segment being written is abandoned.
                with contextlib.closing(
                    _write_segments(ix, documents(store.iter_chunks()))
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
            for document in documents(add_chunks):
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
            for _ in _write_segments(ix, documents(add_chunks)):
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
