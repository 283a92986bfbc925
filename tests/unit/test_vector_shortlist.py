"""The binary shortlist that searches a large vault by meaning: what it returns is the exact
scan's answer, scored by the exact scan's kernel, within the filter it is given."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from apus.index.shortlist import SHORTLIST_FROM, BinaryShortlist, signs
from apus.index.vectors import VectorSearch, nearest

DIMS = 64


TOPICS = np.random.default_rng(4).standard_normal((200, DIMS)).astype(np.float32)


def clustered(count: int, seed: int) -> np.ndarray:
    """Unit vectors around 200 topics, as embeddings of notes on a few hundred subjects are:
    a topic's members are far nearer each other than anything else. Queries are drawn the
    same way: questions about those subjects."""
    rng = np.random.default_rng(seed)
    rows = TOPICS[rng.integers(0, len(TOPICS), count)]
    rows = rows + 0.35 * rng.standard_normal((count, DIMS)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def index_of(rows: np.ndarray, ids: np.ndarray, fp16: bool = False) -> faiss.IndexIDMap:
    dims = rows.shape[1]
    if fp16:
        codes = faiss.ScalarQuantizer.QT_fp16
        inner: faiss.Index = faiss.IndexScalarQuantizer(dims, codes, faiss.METRIC_INNER_PRODUCT)
    else:
        inner = faiss.IndexFlatIP(dims)
    index = faiss.IndexIDMap2(inner)
    index.add_with_ids(rows, ids)
    return index


@pytest.fixture(scope="module")
def large() -> tuple[faiss.IndexIDMap, np.ndarray, np.ndarray]:
    """An index just past the size from which searches go through the shortlist; chunk ids
    are sparse and not in insertion order, as a store's are after edits."""
    rows = clustered(SHORTLIST_FROM + 500, seed=5)
    ids = np.random.default_rng(6).permutation(len(rows) * 3)[: len(rows)].astype(np.int64)
    queries = clustered(40, seed=7)
    return index_of(rows, ids), ids, queries


def test_signs_are_one_bit_a_dimension_padded_to_whole_words() -> None:
    rows = np.array([[0.5, -0.1, 0.0, 2.0] * 20], dtype=np.float32)  # 80 dimensions
    packed = signs(rows)
    assert packed.shape == (1, 16)  # 80 bits padded to 128: two 64-bit words
    bits = np.unpackbits(packed[0])
    assert bits[:80].tolist() == [1, 0, 0, 1] * 20
    assert not bits[80:].any()


def test_a_large_index_is_searched_through_the_shortlist_a_small_one_exactly(
    large: tuple[faiss.IndexIDMap, np.ndarray, np.ndarray],
) -> None:
    index, _ids, _queries = large
    assert VectorSearch(index).shortlist is not None
    small = index_of(clustered(SHORTLIST_FROM - 1, seed=8), np.arange(SHORTLIST_FROM - 1))
    assert VectorSearch(small).shortlist is None


def test_the_shortlist_answers_as_the_exact_scan_does(
    large: tuple[faiss.IndexIDMap, np.ndarray, np.ndarray],
) -> None:
    index, _ids, queries = large
    search = VectorSearch(index)
    for query in queries:
        exact = nearest(index, query, 20)
        found = search(query, 20)
        assert list(found) == list(exact)
        # The exact scan's kernel scores each one: equal to the last bit, not just close.
        assert list(found.values()) == list(exact.values())


def test_a_filter_is_applied_before_the_shortlist_is_cut(
    large: tuple[faiss.IndexIDMap, np.ndarray, np.ndarray],
) -> None:
    index, ids, queries = large
    search = VectorSearch(index)
    # A third of the chunks admitted (a path filter), plus ids the index does not hold.
    admitted = np.concatenate([ids[::3], np.array([-5, 10**9], dtype=np.int64)])
    for query in queries[:10]:
        found = search(query, 20, admitted)
        assert set(found) <= set(ids[::3].tolist())
        assert list(found) == list(nearest(index, query, 20, ids[::3]))
    # Fewer admitted chunks than the shortlist holds: every one is scored exactly.
    few = ids[:7]
    assert search(queries[0], 20, few) == nearest(index, queries[0], 20, few)
    assert search(queries[0], 20, np.array([], dtype=np.int64)) == {}


def test_float16_vectors_are_rescored_from_their_own_codes() -> None:
    rows = clustered(SHORTLIST_FROM + 100, seed=9)
    ids = np.arange(len(rows), dtype=np.int64) + 1000
    index = index_of(rows, ids, fp16=True)
    shortlist = BinaryShortlist(index)
    assert shortlist.vectors.dtype == np.float16
    for query in clustered(10, seed=10):
        exact = nearest(index, query, 10)
        found = shortlist.search(query, 10)
        assert list(found) == list(exact)
        assert np.allclose(list(found.values()), list(exact.values()), atol=1e-3)


def test_each_filter_is_its_own_even_when_searches_alternate(
    large: tuple[faiss.IndexIDMap, np.ndarray, np.ndarray],
) -> None:
    """What a filter admits is kept between searches that ask with the same array; another
    array (another filter, a store changed since) is never answered with the kept one."""
    index, ids, queries = large
    search = VectorSearch(index)
    odd, even = ids[1::2], ids[::2]
    for query in queries[:4]:
        best_odd = next(iter(nearest(index, query, 1, odd)))
        narrowed = odd[odd != best_odd]  # as after that note was deleted: one id fewer
        for admitted in (odd, even, narrowed, odd):
            found = search(query, 20, admitted)
            assert set(found) <= set(admitted.tolist())
            assert list(found) == list(nearest(index, query, 20, admitted))


def test_sparse_chunk_ids_are_found_without_a_table() -> None:
    """Ids far apart (a store after years of edits) are looked up by binary search, not a
    table as long as the largest id."""
    rows = clustered(SHORTLIST_FROM + 50, seed=11)
    ids = np.arange(len(rows), dtype=np.int64) * 1000 + 7
    index = index_of(rows, ids)
    search = VectorSearch(index)
    admitted = ids[::5]
    for query in clustered(5, seed=12):
        assert list(search(query, 10)) == list(nearest(index, query, 10))
        assert list(search(query, 10, admitted)) == list(nearest(index, query, 10, admitted))
