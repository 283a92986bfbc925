"""Whoosh's BM25F scores for an any-of-these-words query, computed with numpy.

Whoosh scores a union query one posting at a time in Python: a common word in a 100k-chunk
index costs a hundred milliseconds or more. Here each term's posting list is read a block at
a time from Whoosh's own postings, and BM25F (Whoosh's formula, IDF and length encoding) is
applied to whole arrays. The scores are Whoosh's to rounding; the tests compare them with
`Searcher.search` on the same index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from whoosh.codec.whoosh3 import LENGTHS_COLUMN
from whoosh.scoring import BM25F
from whoosh.util.numeric import byte_to_length

# Whoosh stores each field length in one byte; this is its decoding table.
_BYTE_TO_LENGTH = np.array([byte_to_length(b) for b in range(256)], dtype=np.float64)


@dataclass(frozen=True)
class Clause:
    """One term in one field, its score multiplied by `boost`."""

    field: str
    term: str
    boost: float = 1.0


class LengthCache:
    """Field lengths of every document, per segment. Segments never change once written
    (deletions aside), so an incremental update only reads the new segment's lengths."""

    def __init__(self) -> None:
        self._arrays: dict[tuple[str, str], np.ndarray] = {}

    def lengths(self, reader: Any, field: str) -> np.ndarray:
        key = (_segment_id(reader), field)
        cached = self._arrays.get(key)
        if cached is None:
            cached = _read_lengths(reader, field)
            self._arrays[key] = cached
        return cached

    def keep_only(self, searcher: Any) -> None:
        """Forget segments the searcher no longer has (merged away); call when it reopens."""
        live = {_segment_id(leaf.reader()) for leaf, _ in searcher.leaf_searchers()}
        self._arrays = {k: v for k, v in self._arrays.items() if k[0] in live}


def _segment_id(reader: Any) -> str:
    segment = reader.segment()
    # An index without documents (empty vault, every note skipped, a first sync stopped
    # before its first batch) has an empty reader and no segment at all.
    return "" if segment is None else segment.segment_id()


def top_scores(
    searcher: Any,
    clauses: Sequence[Clause],
    limit: int,
    lengths: LengthCache,
) -> list[tuple[int, float]]:
    """(docnum, score) of the best `limit` documents matching any clause, best first;
    ties in document order, as Whoosh breaks them. B and K1 are the searcher's BM25F's."""
    weighting = searcher.weighting
    if not isinstance(weighting, BM25F):
        raise TypeError(f"the searcher must score with BM25F, not {type(weighting).__name__}")
    b, k1 = weighting.B, weighting.K1
    scores = np.zeros(searcher.doc_count_all(), dtype=np.float64)
    leaves = searcher.leaf_searchers()
    for clause in clauses:
        if searcher.doc_frequency(clause.field, clause.term) == 0:
            continue
        idf = searcher.idf(clause.field, clause.term)
        avgfl = searcher.avg_field_length(clause.field) or 1
        for leaf, offset in leaves:
            reader = leaf.reader()
            if (clause.field, clause.term) not in reader:
                continue
            ids, tf = _postings(reader, clause.field, clause.term)
            if not len(ids):
                continue
            fl = lengths.lengths(reader, clause.field)[ids]
            bm25 = idf * ((tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * fl / avgfl)))
            scores[ids + offset] += clause.boost * bm25
    matched = np.flatnonzero(scores > 0)
    if not len(matched):
        return []
    if len(matched) > limit:
        # The limit-th best score, then every document at least that good: ties at the
        # boundary are settled by document order below, as Whoosh does.
        threshold = np.partition(scores[matched], len(matched) - limit)[len(matched) - limit]
        matched = matched[scores[matched] >= threshold]
    order = np.lexsort((matched, -scores[matched]))[:limit]
    return [(int(doc), float(scores[doc])) for doc in matched[order]]


def _postings(reader: Any, field: str, term: str) -> tuple[np.ndarray, np.ndarray]:
    """Document numbers and weights (BM25's term frequency) of one term in one segment."""
    matcher = reader.postings(field, term)
    deleted = getattr(reader, "deleted_docs_set", None) or set()
    leaf = getattr(matcher, "child", matcher) if deleted else matcher
    try:
        ids, weights = _read_blocks(leaf)
    except AttributeError:  # another codec: the public, slower, one-posting-at-a-time way
        ids, weights = _read_one_by_one(reader.postings(field, term))
        deleted = set()  # reader.postings() already filtered them
    if deleted:
        keep = ~np.isin(ids, np.fromiter(deleted, dtype=np.int64, count=len(deleted)))
        ids, weights = ids[keep], weights[keep]
    return ids, weights


def _read_blocks(matcher: Any) -> tuple[np.ndarray, np.ndarray]:
    """Whole posting blocks of Whoosh 3's on-disk matcher, without per-posting calls."""
    id_parts: list[np.ndarray] = []
    weight_parts: list[np.ndarray] = []
    while matcher.is_active():
        matcher._read_ids()
        matcher._read_weights()
        id_parts.append(np.asarray(matcher._ids, dtype=np.int64))
        weight_parts.append(np.asarray(matcher._weights, dtype=np.float64))
        matcher._next_block()
    if not id_parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    return np.concatenate(id_parts), np.concatenate(weight_parts)


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
