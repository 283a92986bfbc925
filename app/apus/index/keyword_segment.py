"""Whoosh segments written from analysed documents, postings gathered in arrays.

Whoosh's own writer spends most of a build per posting in Python: a Token per word, a tuple
per posting in a pool it sorts, then a call per posting into the block writer, which reads
every document's field length back from disk. `SegmentBuilder` is that writer fed documents
whose fields are already term lists: it counts each field's terms at once (`Counter`), keeps
postings as integer arrays, sorts them with numpy when the segment is written and writes
whole blocks. The files are the ones Whoosh's writer makes from the same documents, byte for
byte (the tests compare them), so every Whoosh reader, merge and later writer takes them as
its own; the per-document columns (field lengths, numeric columns) are written by Whoosh's
own per-document writer as they are for any document.
"""

from __future__ import annotations

import contextlib
import struct
import zlib
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pickle import dumps
from typing import Any, cast

import numpy as np
from whoosh.codec.whoosh3 import COMPRESSION_MIN_SIZE, WHOOSH3_HEADER_MAGIC, W3TermInfo
from whoosh.system import pack_int, pack_long, pack_ushort
from whoosh.util.numeric import length_to_byte
from whoosh.writing import SegmentWriter

from apus.index.keyword_schema import TermCounts

# Whoosh 3's defaults (`W3Codec`): postings per block and zlib level of a block.
_BLOCK = 128
_ZLIB_LEVEL = 3
# Postings made Python objects, and buffered as bytes, at a time.
_WINDOW = 1 << 16
_TERM_INFO = W3TermInfo._struct
# A term table record's key and value lengths (`HashWriter`'s).
_KEY_VALUE_LENGTHS = struct.Struct("!ii")


@dataclass
class _FieldPostings:
    """One field's postings as the documents came: term ids (by first sight), frequencies
    and how many postings each document added; its documents' encoded lengths."""

    vocabulary: dict[str, int] = field(default_factory=dict)
    term_ids: array[int] = field(default_factory=lambda: array("I"))
    frequencies: array[int] = field(default_factory=lambda: array("I"))
    per_document: array[int] = field(default_factory=lambda: array("I"))
    length_bytes: array[int] = field(default_factory=lambda: array("B"))

    def add(self, terms: Sequence[str]) -> None:
        counts = Counter(terms)
        vocabulary = self.vocabulary
        found = list(map(vocabulary.get, counts))
        if None in found:  # terms met for the first time
            known = vocabulary.setdefault
            self.term_ids.extend([known(term, len(vocabulary)) for term in counts])
        else:
            self.term_ids.extend(cast(list[int], found))
        self.frequencies.extend(counts.values())
        self.per_document.append(len(counts))
        self.length_bytes.append(length_to_byte(len(terms)))

    def skip(self) -> None:
        """A document without this field."""
        self.per_document.append(0)
        self.length_bytes.append(0)

    def postings(self) -> int:
        return len(self.term_ids)


class SegmentBuilder(SegmentWriter):
    """A Whoosh writer for new documents given as term lists per field (`add_terms`).

    Every indexed field given must use the `TermCounts` format (a posting's weight is its
    frequency, and it stores no other value). `finish` adds the segment to the index and
    merges no other; deletions and merges are a Whoosh writer's.
    """

    def __init__(self, ix: Any, *, compound: bool = True) -> None:
        # Whoosh's pool (`limitmb`) is never filled: postings go to the arrays.
        super().__init__(ix, compound=compound)  # type: ignore[no-untyped-call]
        self._fields: dict[str, _FieldPostings] = {}

    def add_terms(self, terms: Mapping[str, Sequence[str]], columns: Mapping[str, int]) -> None:
        """Add a document: each indexed field's terms in order, and numeric column values."""
        self._check_state()  # type: ignore[no-untyped-call]
        schema = self.schema
        writer = self.perdocwriter
        docnum = self.docnum
        writer.start_doc(docnum)
        # In the order Whoosh's writer takes them (sorted names): the columns are made in it.
        for name in sorted([*terms, *columns]):
            fieldobj = schema[name]
            if name in terms:
                values = terms[name]
                if values:
                    writer.add_field(name, fieldobj, None, len(values))
                    self._postings(name, fieldobj).add(values)
            else:
                value = fieldobj.to_column_value(columns[name])
                writer.add_column_value(name, fieldobj.column_type, value)
        for postings in self._fields.values():
            if len(postings.per_document) <= docnum - self.docbase:
                postings.skip()
        writer.finish_doc()
        self._added = True
        self.docnum += 1

    def finish(self) -> None:
        """Write the segment and add it to the index's segments, merging none of them."""
        self.commit(merge=False)  # type: ignore[no-untyped-call]

    def abandon(self) -> None:
        """Write nothing (after a failure: a commit that failed half-way has closed the
        writer already, and Whoosh's cancel would then hide the real error)."""
        with contextlib.suppress(Exception):
            self.cancel()  # type: ignore[no-untyped-call]

    def postings(self) -> int:
        """Postings gathered so far (what the memory they hold grows with)."""
        return sum(postings.postings() for postings in self._fields.values())

    def _postings(self, name: str, fieldobj: Any) -> _FieldPostings:
        postings = self._fields.get(name)
        if postings is None:
            fmt = fieldobj.format
            if type(fmt) is not TermCounts or fmt.field_boost != 1.0:
                raise ValueError(f"field {name!r} does not hold plain term counts")
            postings = self._fields[name] = _FieldPostings()
            for _ in range(self.docnum - self.docbase):  # the documents added before
                postings.skip()
        return postings

    def _flush_segment(self) -> None:
        # What Whoosh's writer does here (its pool of postings is empty: nothing was added
        # to it), with the postings from the arrays.
        self.perdocwriter.close()
        fieldwriter = self.fieldwriter
        for name in sorted(self._fields):
            postings = self._fields[name]
            if not postings.postings():
                continue
            fieldwriter.start_field(name, self.schema[name])
            _write_field(fieldwriter, postings)
            fieldwriter.finish_field()
        self._fields = {}
        fieldwriter.close()


@dataclass(frozen=True)
class _Sorted:
    """A field's postings in Whoosh's order (term, then document), and where each term's
    postings start (the last entry: their count)."""

    terms: list[str]
    starts: list[int]
    documents: np.ndarray
    # Each posting's document less the one before it, or the document itself where a block
    # starts (every `_BLOCK` postings of a term): the ids a block stores.
    ids: np.ndarray
    frequencies: np.ndarray
    length_bytes: np.ndarray


def _sorted(postings: _FieldPostings) -> _Sorted:
    terms = sorted(postings.vocabulary)  # code point order: the order of their UTF-8 bytes
    rank = np.empty(len(terms), dtype=np.uint32)
    rank[[postings.vocabulary[term] for term in terms]] = np.arange(len(terms))
    keys = rank[np.frombuffer(postings.term_ids, dtype=np.uint32)]
    counts = np.bincount(keys, minlength=len(terms))
    order = np.argsort(keys, kind="stable")  # documents stay in the order they came
    del keys
    per_document = np.frombuffer(postings.per_document, dtype=np.uint32)
    documents = np.repeat(np.arange(len(per_document), dtype=np.int32), per_document)[order]
    frequencies = np.frombuffer(postings.frequencies, dtype=np.uint32)[order]
    del order
    starts = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    ids = np.diff(documents, prepend=np.int32(0))
    block_starts = _block_starts(starts, counts)
    ids[block_starts] = documents[block_starts]
    return _Sorted(
        terms,
        starts.tolist(),
        documents,
        ids,
        frequencies,
        np.frombuffer(postings.length_bytes, dtype=np.uint8)[documents],
    )


def _block_starts(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Where each block of each term starts: at the term's first posting, and every
    `_BLOCK` postings after it in a term with more."""
    firsts = [starts[:-1][counts > 0]]
    for term in np.flatnonzero(counts > _BLOCK):
        firsts.append(np.arange(starts[term] + _BLOCK, starts[term + 1], _BLOCK))
    return np.concatenate(firsts)


@dataclass(frozen=True)
class _Window:
    """The postings of a run of terms as Python lists (a window: never all of a field's
    postings as Python objects at once); `first` is the field-wide index of the first."""

    first: int
    documents: list[int]
    ids: list[int]
    frequencies: list[int]
    length_bytes: list[int]


def _window(data: _Sorted, start: int, end: int) -> _Window:
    return _Window(
        start,
        data.documents[start:end].tolist(),
        data.ids[start:end].tolist(),
        data.frequencies[start:end].tolist(),
        data.length_bytes[start:end].tolist(),
    )


def _write_field(fieldwriter: Any, postings: _FieldPostings) -> None:
    """Every term of one field: its blocks into the postings file and its term info into
    the term table, as `W3FieldWriter` and `W3PostingsWriter` write them."""
    data = _sorted(postings)
    postfile = fieldwriter._postfile
    prefix = pack_ushort(fieldwriter._fieldid)
    starts = data.starts
    term = 0
    while term < len(data.terms):
        # Terms whose postings fit a window (at least one term).
        last = max(bisect_right(starts, starts[term] + _WINDOW, term + 1) - 1, term + 1)
        window = _window(data, starts[term], starts[last])
        base = postfile.tell()
        parts: list[bytes] = []
        size = 0
        records: list[tuple[bytes, bytes]] = []
        for index in range(term, last):
            start, end = starts[index] - window.first, starts[index + 1] - window.first
            if end - start == 1:
                blocks, info = _single(window, start)
            else:
                blocks, info = _term_blocks(window, start, end), _term_info(window, start, end)
            parts.append(blocks)
            extent = pack_long(base + size) + pack_int(len(blocks))
            size += len(blocks)
            records.append((prefix + data.terms[index].encode("utf-8"), info + extent))
        postfile.write(b"".join(parts))
        _add_terms(fieldwriter._tindex, records)
        term = last


def _add_terms(table: Any, records: list[tuple[bytes, bytes]]) -> None:
    """`OrderedHashWriter.add` for each (key, value), keys in order, written at once."""
    if not records:
        return
    if records[0][0] <= table.lastkey:
        raise ValueError("term keys must increase")
    position = table.dbfile.tell()
    hashed, buckets, positions = table.hashfn, table.buckets, table.index
    parts: list[bytes] = []
    for key, value in records:
        positions.append(position)
        code = hashed(key)
        buckets[code & 255].append((code, position))
        parts += (_KEY_VALUE_LENGTHS.pack(len(key), len(value)), key, value)
        position += _KEY_VALUE_LENGTHS.size + len(key) + len(value)
    table.dbfile.write(b"".join(parts))
    table.lastkey = records[-1][0]


def _single(window: _Window, index: int) -> tuple[bytes, bytes]:
    """`_term_blocks` and `_term_info` of a term in one document (most terms of a field)."""
    document, frequency = window.documents[index], window.frequencies[index]
    length, weight = window.length_bytes[index], float(frequency)
    payload = dumps(((document,), None if frequency == 1 else weight, None), 2)
    compression = _ZLIB_LEVEL if len(payload) >= COMPRESSION_MIN_SIZE else 0
    if compression:
        payload = zlib.compress(payload, compression)
    head = dumps((1, document, weight, compression, length, length), 2)
    blocks = WHOOSH3_HEADER_MAGIC + pack_int(-len(head) - len(payload)) + head + payload
    info = _TERM_INFO.pack(0, weight, 1, length, length, weight, document, document)
    return blocks, info


def _term_info(window: _Window, start: int, end: int) -> bytes:
    """`W3TermInfo.to_bytes` of a term's postings [start, end) of the window, less where
    they lie."""
    frequencies = window.frequencies[start:end]
    lengths = window.length_bytes[start:end]
    return _TERM_INFO.pack(
        0,
        float(sum(frequencies)),
        end - start,
        min(lengths),
        max(lengths),
        float(max(frequencies)),
        window.documents[start],
        window.documents[end - 1],
    )


def _term_blocks(window: _Window, start: int, end: int) -> bytes:
    """A term's postings [start, end) as `W3PostingsWriter` writes them: a tag, then blocks."""
    parts = [WHOOSH3_HEADER_MAGIC]
    for block in range(start, end, _BLOCK):
        parts.append(_block(window, block, min(block + _BLOCK, end), block + _BLOCK >= end))
    return b"".join(parts)


def _block(window: _Window, start: int, end: int, last: bool) -> bytes:
    """One block of postings [start, end): its length, its info and its (compressed) data."""
    frequencies = window.frequencies[start:end]
    lengths = window.length_bytes[start:end]
    highest = max(frequencies)
    if highest == 1:
        weights: object = None
    elif highest == min(frequencies):
        weights = float(highest)
    else:
        weights = tuple(map(float, frequencies))
    payload = dumps((tuple(window.ids[start:end]), weights, None), 2)  # no values
    compression = _ZLIB_LEVEL if len(payload) >= COMPRESSION_MIN_SIZE else 0
    if compression:
        payload = zlib.compress(payload, compression)
    last_document = window.documents[end - 1]
    info = dumps(
        (end - start, last_document, float(highest), compression, min(lengths), max(lengths)), 2
    )
    size = len(info) + len(payload)
    return pack_int(-size if last else size) + info + payload
