"""BM25F over Whoosh's postings, scored per chunk and per note, with numpy.

Whoosh keeps the postings; the scoring is done here, on whole posting lists, because Whoosh
scores a union query one posting at a time in Python (a common word in a 100k-chunk index
costs a hundred milliseconds or more) and its own BM25F is not the one that ranks best:

- Fields are combined before saturation (Robertson and Zaragoza's BM25F): a word in the
  title and the body of a chunk is one strong match, not two saturated ones summed.
- IDF is Lucene's `ln(1 + (N - df + 0.5) / (df + 0.5))`, which gives very common words
  almost nothing; Whoosh's `1 + ln(N / (df + 1))` gives every word at least 1.
- Every statistic (N, df, average lengths) counts live documents only. Whoosh keeps
  deleted documents in its counts until segments merge, so an index updated in place would
  rank differently from the same notes indexed afresh.
- A chunk scores at least what its note scores as a whole (the note's chunks taken as one
  text, each line once: the overlap a chunk repeats from the one before is subtracted), so
  a note split into chunks never ranks below the same note unsplit, even when the words of
  a query fall in different chunks. The note's other matching chunks get that floor scaled
  by how well they match next to its best one, so the best passage leads. A long note whose
  words sit in one passage keeps that passage's own (higher) score: scored only as a whole,
  length normalisation would bury it under every short note that mentions the words once.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from whoosh.codec.whoosh3 import LENGTHS_COLUMN
from whoosh.reading import TermNotFound
from whoosh.util.numeric import byte_to_length

from apus.index.sorted_ids import sorted_unique

# Whoosh stores each field length in one byte; this is its decoding table.
_BYTE_TO_LENGTH = np.array([byte_to_length(b) for b in range(256)], dtype=np.float64)
_NO_NOTE = -1
# Decoded postings a session keeps (`PostingsCache`): 32 MB holds the posting lists of a few
# hundred common words at 118k chunks (the longest, ~100k postings, is 1.6 MB).
POSTINGS_BUDGET_BYTES = 32 << 20
# What an entry costs besides its arrays (key, tuple, array headers): counted so that a budget
# of many short or absent lists is kept too.
_ENTRY_BYTES = 256


@dataclass(frozen=True)
class Bm25Params:
    """BM25F parameters: saturation `k1`, length normalisation `b`, and groups of weighted
    fields. The fields of a group are one text to BM25F (their weighted frequencies add up
    before saturating); each group saturates apart and the groups' scores add up.

    `note_field` is the column holding each chunk's note id, `id_field` the one holding the
    id callers know a chunk by; `repeated_in` names, for a
    field, the field holding the part of it that repeats the previous chunk (subtracted
    when the note is scored as a whole). Fields without one hold the same text in every
    chunk of a note (path, title) or only a little (headings): the note takes the most.
    """

    groups: tuple[Mapping[str, float], ...]
    k1: float = 1.2
    b: float = 0.75
    note_field: str = "note"
    id_field: str = "chunk"
    repeated_in: Mapping[str, str] | None = None

    @property
    def weights(self) -> dict[str, float]:
        """Every scored field with its weight."""
        return {field: weight for group in self.groups for field, weight in group.items()}

    def fields(self) -> list[str]:
        """Every field whose postings and lengths are read."""
        weights = self.weights
        extra = list((self.repeated_in or {}).values())
        return [*weights, *(f for f in extra if f not in weights)]


_Postings = tuple[np.ndarray, np.ndarray] | None


class PostingsCache:
    """The decoded postings (document numbers, frequencies; None: the segment lacks the
    term) of the latest (segment, field, term)s looked up, within a budget of bytes, least
    recently used first out. A segment never changes once written (its deletions are applied
    after, by the live mask), and a session's queries repeat words: each keystroke of a search
    being typed, and common words across questions (on the search bench's 300 queries, 59% of
    the postings decoded, weighed by their length, were of a word an earlier query had).
    Decoding them (zlib and pickle per block of 128) is most of a keyword leg."""

    def __init__(self, budget_bytes: int = POSTINGS_BUDGET_BYTES) -> None:
        self._budget = budget_bytes
        self._used = 0
        self._entries: OrderedDict[tuple[str, str, str], tuple[_Postings, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> tuple[bool, _Postings]:
        """(whether `key` is held, its postings)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False, None
            self._entries.move_to_end(key)
            return True, entry[0]

    def put(self, key: tuple[str, str, str], postings: _Postings) -> None:
        size = _ENTRY_BYTES + (0 if postings is None else postings[0].nbytes + postings[1].nbytes)
        if size > self._budget:
            return
        if postings is not None:
            for array in postings:
                array.flags.writeable = False  # shared by later searches: never changed
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._used -= old[1]
            self._entries[key] = (postings, size)
            self._used += size
            while self._used > self._budget:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._used -= dropped

    def keep_only(self, segments: set[str]) -> None:
        """Forget the postings of segments no longer read (merged away, or a rebuild's)."""
        with self._lock:
            for key in [key for key in self._entries if key[0] not in segments]:
                self._used -= self._entries.pop(key)[1]

    def __len__(self) -> int:
        return len(self._entries)


class SegmentCache:
    """Field lengths and note ids of every document, per segment, and the postings lately
    read (`postings`). A segment never changes once written (deletions aside), so an
    incremental update only reads the new segment."""

    def __init__(self) -> None:
        self._arrays: dict[tuple[str, str], np.ndarray] = {}
        self.postings = PostingsCache()

    def lengths(self, reader: Any, field: str) -> np.ndarray:
        return self._get(reader, "len:" + field, lambda: _read_lengths(reader, field))

    def numbers(self, reader: Any, field: str) -> np.ndarray:
        return self._get(reader, "column:" + field, lambda: read_numbers(reader, field))

    def _get(self, reader: Any, what: str, read: Any) -> np.ndarray:
        key = (segment_id(reader), what)
        cached = self._arrays.get(key)
        if cached is None:
            cached = read()
            self._arrays[key] = cached
        return cached

    def keep_only(self, reader: Any) -> None:
        """Forget segments the reader no longer has (merged away); call when it reopens."""
        live = {segment_id(leaf) for leaf, _ in reader.leaf_readers()}
        self._arrays = {k: v for k, v in self._arrays.items() if k[0] in live}
        self.postings.keep_only(live)


def segment_id(reader: Any) -> str:
    segment = reader.segment()
    # An index without documents has an empty reader and no segment at all.
    return "" if segment is None else segment.segment_id()


@dataclass(frozen=True)
class _Level:
    """Lengths and their averages over the live units (chunks or notes) of one level."""

    count: int
    lengths: dict[str, np.ndarray]
    averages: dict[str, float]


@dataclass(frozen=True)
class Statistics:
    """What BM25F needs besides postings, over live documents only; built once per
    reader (deletions change when the reader reopens, segments do not)."""

    live: np.ndarray  # bool per document number
    ids: np.ndarray  # document number -> the chunk's id (`id_field`)
    note_of: np.ndarray  # document number -> note number (0..notes-1), -1 when deleted
    chunks: _Level
    notes: _Level
    postings: PostingsCache  # the segment cache's: decoded postings lately read


def collect_statistics(index: Any, params: Bm25Params, cache: SegmentCache) -> Statistics:
    total = index.doc_count_all()
    live = np.zeros(total, dtype=bool)
    note_ids = np.full(total, _NO_NOTE, dtype=np.int64)
    ids = np.zeros(total, dtype=np.int64)
    lengths = {field: np.zeros(total, dtype=np.float64) for field in params.fields()}
    for reader, offset in index.leaf_readers():
        count = reader.doc_count_all()
        if not count:
            continue
        span = slice(offset, offset + count)
        alive = np.ones(count, dtype=bool)
        deleted = _deleted(reader)
        if len(deleted):
            alive[deleted] = False
        live[span] = alive
        note_ids[span] = np.where(alive, cache.numbers(reader, params.note_field), _NO_NOTE)
        ids[span] = cache.numbers(reader, params.id_field)
        for field, array in lengths.items():
            array[span] = cache.lengths(reader, field)
    unique, note_of = np.unique(note_ids, return_inverse=True)
    if len(unique) and unique[0] == _NO_NOTE:  # deleted documents belong to no note
        note_of = note_of - 1
        unique = unique[1:]
    note_of[~live] = _NO_NOTE
    chunk_count = int(live.sum())
    for array in lengths.values():
        array[~live] = 0.0
    chunks = _Level(chunk_count, lengths, _averages(lengths, chunk_count))
    note_lengths = _note_lengths(lengths, note_of[live], live, len(unique), params)
    notes = _Level(len(unique), note_lengths, _averages(note_lengths, len(unique)))
    return Statistics(live, ids, note_of, chunks, notes, cache.postings)


def _averages(lengths: Mapping[str, np.ndarray], count: int) -> dict[str, float]:
    return {field: float(array.sum()) / count if count else 0.0 for field, array in lengths.items()}


def _note_lengths(
    lengths: Mapping[str, np.ndarray],
    note_of_live: np.ndarray,
    live: np.ndarray,
    notes: int,
    params: Bm25Params,
) -> dict[str, np.ndarray]:
    repeated = params.repeated_in or {}
    result: dict[str, np.ndarray] = {}
    for field in params.weights:
        per_chunk = lengths[field][live]
        if field in repeated:
            per_chunk = per_chunk - lengths[repeated[field]][live]
            result[field] = np.bincount(note_of_live, weights=per_chunk, minlength=notes)
        else:
            most = np.zeros(notes, dtype=np.float64)
            np.maximum.at(most, note_of_live, per_chunk)
            result[field] = most
    return result


def lucene_idf(count: int, frequency: int) -> float:
    return math.log(1.0 + (count - frequency + 0.5) / (frequency + 0.5))


def top_scores(
    reader: Any,
    terms: Iterable[str],
    limit: int,
    stats: Statistics,
    params: Bm25Params,
    allowed: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """(docnum, score) of the best `limit` chunks matching any of `terms`, best first;
    ties in document order. A chunk scores its own BM25F score or, if higher, its note's
    whole-note BM25F score times its own over the best one of its note. With `allowed`
    (chunk ids), only those chunks compete: a filter applied before the cut, not after."""
    chunk_scores = np.zeros(len(stats.live), dtype=np.float64)
    note_scores = np.zeros(stats.notes.count, dtype=np.float64)
    leaves = reader.leaf_readers()
    for term in dict.fromkeys(terms):
        postings = _term_postings(leaves, term, params.fields(), stats)
        if postings is None:
            continue
        matched, tf = postings
        chunk_scores[matched] += _chunk_term_scores(matched, tf, stats, params)
        notes, scores = _note_term_scores(matched, tf, stats, params)
        note_scores[notes] += scores
    if allowed is not None:
        chunk_scores[~_admitted(stats.ids, allowed)] = 0.0
    return _final_ranking(chunk_scores, note_scores, stats, limit)


def _admitted(ids: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Per document: is its chunk id among `allowed`? (A lookup table: linear in both.)"""
    if not len(allowed) or not len(ids):
        return np.zeros(len(ids), dtype=bool)
    size = int(max(ids.max(), allowed.max())) + 1
    table = np.zeros(size, dtype=bool)
    table[allowed] = True
    admitted: np.ndarray = table[ids]
    return admitted


def _term_postings(
    leaves: list[tuple[Any, int]], term: str, fields: list[str], stats: Statistics
) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """The live documents holding `term` in any field (sorted), and its frequency in each
    field for each of them (0 where absent)."""
    live = stats.live
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    segments = [segment_id(leaf) for leaf, _ in leaves]
    for field in fields:
        ids_parts, tf_parts = [], []
        for (leaf, offset), segment in zip(leaves, segments, strict=True):
            key = (segment, field, term)
            held, postings = stats.postings.get(key)
            if not held:
                postings = _postings(leaf, field, term)
                stats.postings.put(key, postings)
            if postings is None:
                continue
            ids, tf = postings
            ids = ids + offset
            keep = live[ids]
            ids_parts.append(ids[keep])
            tf_parts.append(tf[keep])
        if ids_parts:
            found[field] = (np.concatenate(ids_parts), np.concatenate(tf_parts))
    if not found:
        return None
    matched = sorted_unique(np.concatenate([ids for ids, _ in found.values()]))
    if not len(matched):
        return None
    tf_by_field: dict[str, np.ndarray] = {}
    for field in fields:
        column = np.zeros(len(matched), dtype=np.float64)
        if field in found:
            ids, tf = found[field]
            column[np.searchsorted(matched, ids)] = tf
        tf_by_field[field] = column
    return matched, tf_by_field


def _saturate(weighted_tf: np.ndarray, k1: float) -> np.ndarray:
    return weighted_tf * (k1 + 1.0) / (weighted_tf + k1)


def _normalised(tf: np.ndarray, length: np.ndarray, average: float, b: float) -> np.ndarray:
    return tf / ((1.0 - b) + b * length / (average or 1.0))


def _chunk_term_scores(
    matched: np.ndarray, tf: Mapping[str, np.ndarray], stats: Statistics, params: Bm25Params
) -> np.ndarray:
    level = stats.chunks
    lengths = {field: level.lengths[field][matched] for field in params.weights}
    return _group_scores(tf, lengths, level, params)


def _note_term_scores(
    matched: np.ndarray, tf: Mapping[str, np.ndarray], stats: Statistics, params: Bm25Params
) -> tuple[np.ndarray, np.ndarray]:
    """The notes holding the term and the term's BM25F score in each, the note taken whole."""
    level = stats.notes
    repeated = params.repeated_in or {}
    notes, position = np.unique(stats.note_of[matched], return_inverse=True)
    note_tf: dict[str, np.ndarray] = {}
    for field in params.weights:
        if field in repeated:
            fresh = tf[field] - tf[repeated[field]]
            note_tf[field] = np.bincount(position, weights=fresh, minlength=len(notes))
        else:
            most = np.zeros(len(notes), dtype=np.float64)
            np.maximum.at(most, position, tf[field])
            note_tf[field] = most
    lengths = {field: level.lengths[field][notes] for field in params.weights}
    return notes, _group_scores(note_tf, lengths, level, params)


def _group_scores(
    tf: Mapping[str, np.ndarray],
    lengths: Mapping[str, np.ndarray],
    level: _Level,
    params: Bm25Params,
) -> np.ndarray:
    """One term's BM25F score for each unit (chunk or note) of `level` given its field
    frequencies and lengths: per group, weighted normalised frequencies saturate once."""
    total = np.zeros(len(next(iter(tf.values()))), dtype=np.float64)
    for group in params.groups:
        weighted = np.zeros_like(total)
        for field, weight in group.items():
            if weight:
                weighted += weight * _normalised(
                    tf[field], lengths[field], level.averages[field], params.b
                )
        weighted = np.maximum(weighted, 0.0)
        frequency = int((weighted > 0).sum())
        if frequency:
            total += lucene_idf(level.count, frequency) * _saturate(weighted, params.k1)
    return total


def _final_ranking(
    chunk_scores: np.ndarray, note_scores: np.ndarray, stats: Statistics, limit: int
) -> list[tuple[int, float]]:
    matched = np.flatnonzero(chunk_scores > 0)
    if not len(matched) or limit <= 0:
        return []
    notes = stats.note_of[matched]
    best = np.zeros(len(note_scores), dtype=np.float64)
    np.maximum.at(best, notes, chunk_scores[matched])
    own = chunk_scores[matched]
    scores = np.maximum(own, note_scores[notes] * own / best[notes])
    if len(matched) > limit:
        # The limit-th best score, then every chunk at least that good: ties at the
        # boundary are settled by document order below.
        threshold = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        keep = scores >= threshold
        matched, scores = matched[keep], scores[keep]
    order = np.lexsort((matched, -scores))[:limit]
    return [(int(matched[i]), float(scores[i])) for i in order]


def _deleted(reader: Any) -> np.ndarray:
    if not reader.has_deletions():
        return np.empty(0, dtype=np.int64)
    deleted = getattr(reader, "deleted_docs_set", None)
    if deleted is None:  # another codec: ask for each document
        deleted = [doc for doc in range(reader.doc_count_all()) if reader.is_deleted(doc)]
    return np.fromiter(deleted, dtype=np.int64, count=len(deleted))


def _postings(reader: Any, field: str, term: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Document numbers and term frequencies of one term in one segment, deleted documents
    included (the caller drops them with the live mask); None when the segment lacks it.
    Asking for the postings looks the term up once (a membership test first was a second
    hash lookup, per field and segment of every query term)."""
    try:
        matcher = reader.postings(field, term)
    except TermNotFound:
        return None
    try:
        # Whoosh wraps the on-disk matcher to skip deletions; the blocks are read below it.
        return _read_blocks(getattr(matcher, "child", matcher))
    except AttributeError:  # another codec: the public, slower, one-posting-at-a-time way
        return _read_one_by_one(reader.postings(field, term))


def _read_blocks(matcher: Any) -> tuple[np.ndarray, np.ndarray]:
    """Whole posting blocks of Whoosh 3's on-disk matcher, without per-posting calls: a
    block's ids are delta-encoded (summed here with numpy, not one generator step each) and
    its weights an array, or one value (or none: 1.0) for every posting."""
    id_parts: list[np.ndarray] = []
    weight_parts: list[np.ndarray] = []
    while matcher.is_active():
        if matcher._data is None:
            matcher._read_data()
        ids, weights = matcher._data[0], matcher._data[1]
        ids = np.asarray(ids, dtype=np.int64)
        id_parts.append(ids if matcher._byteids else np.cumsum(ids))
        weight_parts.append(_block_weights(weights, matcher._blocklength))
        matcher._next_block()
    if not id_parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    return np.concatenate(id_parts), np.concatenate(weight_parts)


def _block_weights(weights: Any, count: int) -> np.ndarray:
    """A block's weights as Whoosh reads them (single precision), as float64."""
    if weights is None:
        return np.ones(count, dtype=np.float64)
    if isinstance(weights, float):
        return np.full(count, weights, dtype=np.float32).astype(np.float64)
    return np.asarray(weights, dtype=np.float64)


def _read_one_by_one(matcher: Any) -> tuple[np.ndarray, np.ndarray]:
    ids: list[int] = []
    weights: list[float] = []
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    return np.asarray(ids, dtype=np.int64), np.asarray(weights, dtype=np.float64)


def _read_lengths(reader: Any, field: str) -> np.ndarray:
    count = reader.doc_count_all()
    try:
        column = reader._perdoc._cached_reader(f"_{field}_len", LENGTHS_COLUMN)
        raw = column._dbfile.get(column._basepos, column._count) if column else b""
        encoded = np.zeros(count, dtype=np.uint8)
        encoded[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        return _BYTE_TO_LENGTH[encoded]
    except AttributeError:  # another codec: ask for each document
        return np.array(
            [reader.doc_field_length(doc, field) or 0 for doc in range(count)], dtype=np.float64
        )


def read_numbers(reader: Any, field: str) -> np.ndarray:
    """A numeric column's values for every document of one segment."""
    count = reader.doc_count_all()
    column = reader.column_reader(field, translate=False)
    try:
        # Whoosh writes fixed-width big-endian values and leaves trailing defaults out.
        raw = column._dbfile.get(column._basepos, column._count * column._fixedlen)
        values = np.full(count, column._default, dtype=np.int64)
        values[: column._count] = np.frombuffer(raw, dtype=">" + column._typecode)
        return values
    except AttributeError:  # another column type: ask for each document
        return np.fromiter((int(value) for value in column), dtype=np.int64, count=count)
