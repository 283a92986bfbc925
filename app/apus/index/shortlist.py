"""A binary shortlist over a flat FAISS index: the search by meaning of a large vault.

An exact search reads every stored vector for every query: 118k passages at 768 float32
dimensions are 363 MB a query, about 30 ms on one core however the vectors are laid out.
This keeps one bit a dimension of each vector (its sign), 96 bytes at 768 dimensions, finds
the `shortlist_size` vectors nearest the query's bits by Hamming distance (FAISS's popcount
scan, about 1 ms at 118k), then scores those exactly against the stored vectors, so the
scores are the flat index's own cosines and only which vectors are scored changes.

It is made in memory from the loaded index (nothing on disk changes, no rebuild) and only
for indexes above `SHORTLIST_FROM` vectors: below that an exact scan is already cheap, and
every answer is exactly the flat index's. `apus bench vectors` measures what the shortlist
keeps of the exact answer on a store's real vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from apus.index.sorted_ids import positions_in

if TYPE_CHECKING:
    import faiss

# Vectors scored exactly per vector asked for, at 768 dimensions and more; narrower vectors
# have fewer bits to tell neighbours apart, and get proportionally more (`shortlist_size`).
# Measured on real embeddings (docs/architecture.md, "Search by meaning at scale"): with
# EmbeddingGemma (768) the exact top 200 was whole in the 2,000 nearest by Hamming distance;
# with all-MiniLM-L6-v2 (384) at 24k vectors, ten times k kept 94% of it, twenty times 98%.
SHORTLIST_FACTOR = 10
_FULL_BITS = 768
# Below this many vectors the exact scan is used: at 768 dimensions it costs about 0.25 µs a
# vector (4 ms at 16k), and each answer is then exactly the flat index's.
SHORTLIST_FROM = 16_384
# Signs are taken this many vectors at a time, so making the codes never holds more than a
# block's booleans beside the index.
_BLOCK = 8192
# A table from chunk id to position is kept while the largest id is at most this many times
# the vectors held (8 bytes an id: 7.6 MB at 118k vectors of ids up to a million).
_DENSE_IDS = 8


class BinaryShortlist:
    """Sign bits of every vector of a flat index (`faiss.IndexIDMap2` over `IndexFlatIP` or
    float16 `IndexScalarQuantizer`), searched by Hamming distance, rescored exactly."""

    def __init__(self, index: faiss.IndexIDMap) -> None:
        import faiss

        mapped: Any = index  # FAISS's stubs lack IndexIDMap2's id_map and index
        self._index = index  # keeps the vectors below alive
        self.ids: np.ndarray = faiss.vector_to_array(mapped.id_map).astype(np.int64)
        self.vectors = stored_vectors(faiss.downcast_index(mapped.index), len(self.ids))
        dims = self.vectors.shape[1]
        codes: Any = faiss.IndexBinaryFlat(_code_bits(dims))  # the stubs lack use_heap
        # Counting distances instead of keeping a heap of the shortlist's size: 1.6 against
        # 2.7 ms for 2,000 of 118k codes (the same vectors; ties are cut in index order).
        codes.use_heap = False
        self._codes: faiss.IndexBinaryFlat = codes
        for start in range(0, len(self.ids), _BLOCK):
            self._codes.add(signs(self.vectors[start : start + _BLOCK]))
        self._position_of = _position_table(self.ids)
        # The filter of the last search and what it admits: a session asks with the same
        # admitted chunk ids (one array per store generation and filter) search after search.
        self._admitted: tuple[np.ndarray, _Admitted] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def code_bytes(self) -> int:
        """Bytes of one vector's sign code."""
        return int(self._codes.code_size)

    def search(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> dict[int, float]:
        """Chunk id -> cosine for (very nearly) the k nearest vectors, best first; with
        `allowed` (chunk ids), among those only."""
        wanted = min(shortlist_size(k, self.vectors.shape[1]), len(self))
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        params = None
        if allowed is not None:
            admitted = self._admitted_by(allowed)
            if len(admitted.positions) <= wanted:
                return self._rescored(vector, admitted.positions, k)
            params = admitted.params
        _distances, found = self._codes.search(signs(vector[None, :]), wanted, params=params)
        shortlist = found[0]
        return self._rescored(vector, shortlist[shortlist >= 0], k)

    def _admitted_by(self, allowed: np.ndarray) -> _Admitted:
        """The positions the `allowed` chunk ids hold in the index, and a selector of them,
        kept while searches ask with the same array (building them is a pass over it)."""
        if self._admitted is None or self._admitted[0] is not allowed:
            mask = np.zeros(len(self), dtype=bool)
            mask[self._position_of(np.asarray(allowed, dtype=np.int64))] = True
            self._admitted = (allowed, _Admitted.of(mask))
        return self._admitted[1]

    def _rescored(self, query: np.ndarray, positions: np.ndarray, k: int) -> dict[int, float]:
        if not len(positions):
            return {}
        scores = exact_scores(self.vectors, query, positions)
        if len(scores) > k:
            top = np.argpartition(-scores, k - 1)[:k]
            positions, scores = positions[top], scores[top]
        order = np.lexsort((positions, -scores))
        return {int(self.ids[positions[i]]): float(scores[i]) for i in order}


def shortlist_size(k: int, dims: int) -> int:
    """How many vectors the Hamming scan keeps for a search of `k`: `SHORTLIST_FACTOR` times
    k at 768 dimensions or more, proportionally more below (twice at 384)."""
    return k * SHORTLIST_FACTOR * max(1, -(-_FULL_BITS // max(dims, 1)))


class _Admitted:
    """The positions a filter admits (sorted) and FAISS's selector of them (one bit each)."""

    def __init__(self, positions: np.ndarray, bitmap: np.ndarray, params: Any) -> None:
        self.positions = positions
        self._bitmap = bitmap  # the selector reads it: it lives as long as the selector
        self.params = params

    @classmethod
    def of(cls, mask: np.ndarray) -> _Admitted:
        import faiss

        bitmap = np.packbits(mask, bitorder="little")
        params = faiss.SearchParameters()
        params.sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
        return cls(np.flatnonzero(mask), bitmap, params)


def _position_table(ids: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Chunk ids -> the positions in the index of those it holds: a table indexed by id
    where ids are dense enough for one (a store's usually are), else a binary search."""
    if not len(ids):
        return lambda wanted: np.zeros(0, dtype=np.int64)
    top = int(ids.max())
    if int(ids.min()) >= 0 and top < _DENSE_IDS * len(ids) + 1024:
        table = np.full(top + 1, -1, dtype=np.int64)
        table[ids] = np.arange(len(ids))

        def by_table(wanted: np.ndarray) -> np.ndarray:
            inside = wanted[(wanted >= 0) & (wanted <= top)]
            found: np.ndarray = table[inside]
            return found[found >= 0]

        return by_table
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]

    def by_search(wanted: np.ndarray) -> np.ndarray:
        at = positions_in(ordered, wanted)
        found: np.ndarray = order[at[at >= 0]]
        return found

    return by_search


def exact_scores(vectors: np.ndarray, query: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Inner products of `query` with the rows `positions` of `vectors`: for float32 rows
    FAISS's own kernel, so each score is bit for bit what the exact scan gives it."""
    import faiss

    kernels: Any = faiss  # the stubs lack FAISS's distance functions
    if vectors.dtype == np.float32:
        wanted = np.ascontiguousarray(positions, dtype=np.int64)
        scores = np.empty(len(wanted), dtype=np.float32)
        kernels.fvec_inner_products_by_idx(
            faiss.swig_ptr(scores),
            faiss.swig_ptr(np.ascontiguousarray(query, dtype=np.float32)),
            faiss.swig_ptr(vectors),
            faiss.swig_ptr(wanted),
            vectors.shape[1],
            1,
            len(wanted),
        )
        return scores
    # float16 rows: numpy's einsum stays on this thread (a BLAS product may start threads
    # that spin against the embedding server on a small machine).
    products: np.ndarray = np.einsum("ij,j->i", vectors[positions].astype(np.float32), query)
    return products


def stored_vectors(inner: Any, count: int) -> np.ndarray:
    """The vectors a flat index holds, as an array over its own memory (no copy): float32
    rows of an `IndexFlat`, float16 rows of an `IndexScalarQuantizer` of fp16 codes."""
    import faiss

    dims = int(inner.d)
    if isinstance(inner, faiss.IndexFlat):
        raw = faiss.rev_swig_ptr(inner.get_xb(), count * dims)
        return np.asarray(raw).reshape(count, dims)
    if isinstance(inner, faiss.IndexScalarQuantizer) and inner.code_size == 2 * dims:
        raw = faiss.rev_swig_ptr(inner.codes.data(), count * dims * 2)
        return np.asarray(raw).view(np.float16).reshape(count, dims)
    raise TypeError(f"no shortlist over {type(inner).__name__}")


def signs(vectors: np.ndarray) -> np.ndarray:
    """One bit a dimension (set where it is positive), packed 8 to a byte, rows padded to
    whole 64-bit words as FAISS's binary indexes want."""
    bits = vectors > 0
    padding = _code_bits(bits.shape[1]) - bits.shape[1]
    if padding:
        bits = np.pad(bits, ((0, 0), (0, padding)))
    packed: np.ndarray = np.packbits(bits, axis=1)
    return packed


def _code_bits(dims: int) -> int:
    return -(-dims // 64) * 64
