"""A vector leg without a model, for ranking tests whose subject is not the vector leg.

`WordVectorLeg` keeps the `VectorLeg` protocol the Searcher takes: a text's vector is the sum
of one fixed unit vector per word (made from the word's hash, so the same on every machine and
run), normalised. Texts that share words are near; texts that share none still get small
cosines of either sign, as a real model gives unrelated passages. A test whose scenario needs
a note near or far in meaning says so (`cosines`). Cosines are exact arithmetic over the
chunks the store holds now, so a ranking test weighs real numbers without starting llama.cpp;
the leg itself is tested against the real server.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from apus.index.store import Store
from apus.search.vector_leg import VectorAvailability

DIMS = 64  # wide enough that unrelated texts stay far apart, small enough to be free
_WORD = re.compile(r"\w+")


def word_vector(word: str) -> np.ndarray:
    """The fixed unit vector of one lower-cased word: its hash's bytes, centred on zero (no
    random generator, whose stream may change between numpy releases)."""
    digest = hashlib.blake2b(word.encode("utf-8"), digest_size=DIMS).digest()
    vector = np.frombuffer(digest, dtype=np.uint8).astype(np.float64) - 127.5
    return vector / np.linalg.norm(vector)


def text_vector(text: str) -> np.ndarray:
    """The normalised sum of a text's word vectors (a zero vector for a text without words)."""
    total = np.zeros(DIMS)
    for word in _WORD.findall(text.lower()):
        total += word_vector(word)
    norm = np.linalg.norm(total)
    return total if norm == 0 else total / norm


class WordVectorLeg:
    """A `VectorLeg` over the chunks of the index in `index_dir`, with word-sum vectors.

    `cosines` fixes the cosine of every chunk of the notes it names (path -> cosine to any
    query), for a scenario that needs a note near or far in meaning whatever its words."""

    def __init__(self, index_dir: Path, cosines: Mapping[str, float] | None = None) -> None:
        self.index_dir = index_dir
        self.cosines = dict(cosines or {})
        self.queries: list[str] = []  # what the Searcher asked, in order
        self.closed = False

    def availability(self) -> VectorAvailability:
        return VectorAvailability(usable=True)

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> dict[int, float]:
        """The `k` chunks nearest the query (among `allowed` when given), as FAISS answers."""
        self.queries.append(query)
        ids, paths, vectors = self._chunks()
        scores = vectors @ text_vector(query)
        for path, cosine in self.cosines.items():
            scores[paths == path] = cosine
        if allowed is not None:
            keep = np.isin(ids, allowed)
            ids, scores = ids[keep], scores[keep]
        return _nearest(ids, scores, k)

    def neighbours(self, chunk_ids: list[int], k: int) -> dict[int, float]:
        """Chunk id -> best cosine to any of `chunk_ids`' vectors (themselves included, as a
        FAISS search of a stored vector finds it)."""
        ids, _paths, vectors = self._chunks()
        best: dict[int, float] = {}
        for source in vectors[np.isin(ids, chunk_ids)]:
            for found, score in _nearest(ids, vectors @ source, k).items():
                best[found] = max(score, best.get(found, -2.0))
        return best

    def close(self) -> None:
        self.closed = True

    def _chunks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every chunk's id, note path and vector, read afresh (the Searcher calls from its
        own thread, and a store connection is not shared between threads)."""
        store = Store(self.index_dir, readonly=True)
        try:
            records = list(store.iter_chunks())
        finally:
            store.close()
        ids = np.array([record.id for record in records], dtype=np.int64)
        paths = np.array([record.path for record in records], dtype=object)
        vectors = np.array([text_vector(record.text) for record in records]).reshape(-1, DIMS)
        return ids, paths, vectors


def _nearest(ids: np.ndarray, scores: np.ndarray, k: int) -> dict[int, float]:
    order: Sequence[int] = np.argsort(-scores, kind="stable")[:k].tolist()
    return {int(ids[i]): float(scores[i]) for i in order}
