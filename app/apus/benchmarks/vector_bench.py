"""`apus bench vectors`: the vector leg's index choices side by side, on the same vectors.

Exact inner product (`IndexFlatIP`, what Apus serves) against the binary shortlist that
serves large indexes (`apus.index.shortlist`) and FAISS's approximate indexes (HNSW, IVF) at
the full width and at Matryoshka truncations (the first N dimensions, made unit length
again), for search latency, build time, bytes and recall@10 of the approximate answers
against the exact answer over the same vectors.

Every index answers each query in turn, the order rotating query by query, so a loaded machine
slows them alike; each search is timed in wall time and thread CPU time, on one thread as the
vector leg searches. The vectors are random unit vectors unless a store's are given: random
vectors cost a flat search what real ones do, but they have no cluster structure, so the
recall of an approximate index on them is a floor, not what real embeddings get.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from apus.benchmarks.measure import percentile

if TYPE_CHECKING:
    import faiss

_K = 10
_SEARCH_THREADS = 1  # as the vector leg searches (apus.index.vectors)
# The shortlist is timed as the vector leg asks it: for a search's candidates (the default
# `candidates`), of which the top 10 are compared with the exact top 10.
_LEG_K = 200

_Built = TypeVar("_Built")


@dataclass(frozen=True)
class IndexFigures:
    """One index kind at one width: build cost, size, latency and recall@10 against flat."""

    kind: str
    dims: int
    build_seconds: float
    bytes: int
    wall_p50_ms: float
    wall_p95_ms: float
    cpu_p50_ms: float
    cpu_p95_ms: float
    recall_at_10: float  # of the exact (flat, same width) top 10


@dataclass(frozen=True)
class VectorBenchResult:
    vectors: int
    queries: int
    source: str  # "random" or where the vectors came from
    rows: list[IndexFigures]


def truncate(vectors: np.ndarray, dims: int) -> np.ndarray:
    """The first `dims` dimensions of each row, unit length again (Matryoshka truncation)."""
    head = np.ascontiguousarray(vectors[:, :dims], dtype=np.float32)
    norms = np.linalg.norm(head, axis=1, keepdims=True)
    unit: np.ndarray = head / np.maximum(norms, 1e-12)
    return unit


def random_unit(count: int, dims: int, seed: int = 7) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, dims), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


@dataclass
class _Candidate:
    """One index to time: `prepare` sets its search-time knob before each search."""

    kind: str
    dims: int
    index: faiss.Index | _Shortlisted
    build_seconds: float
    prepare: Callable[[], None] = lambda: None
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    found: list[np.ndarray] = field(default_factory=list)

    def search(self, query: np.ndarray) -> None:
        self.prepare()
        wall, cpu = time.perf_counter(), time.thread_time()
        _scores, ids = self.index.search(query, _K)
        self.cpus.append((time.thread_time() - cpu) * 1000)
        self.walls.append((time.perf_counter() - wall) * 1000)
        self.found.append(ids[0])


def _timed_build(make: Callable[[], _Built]) -> tuple[_Built, float]:
    started = time.perf_counter()
    index = make()
    return index, time.perf_counter() - started


def _flat(data: np.ndarray) -> faiss.Index:
    import faiss

    index = faiss.IndexFlatIP(data.shape[1])
    index.add(data)
    return index


def _hnsw(data: np.ndarray, m: int) -> faiss.Index:
    import faiss

    index = faiss.IndexHNSWFlat(data.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    index.add(data)
    return index


def _ivf(data: np.ndarray, nlist: int) -> faiss.Index:
    import faiss

    quantizer = faiss.IndexFlatIP(data.shape[1])
    index = faiss.IndexIVFFlat(quantizer, data.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
    index.train(data)
    index.add(data)  # FAISS's Python wrapper keeps `quantizer` alive with the index
    return index


def _scalar(data: np.ndarray, kind: str) -> faiss.Index:
    """Flat search over compressed codes: float16 or 8 bits a dimension."""
    import faiss

    codes = faiss.ScalarQuantizer.QT_fp16 if kind == "fp16" else faiss.ScalarQuantizer.QT_8bit
    index = faiss.IndexScalarQuantizer(data.shape[1], codes, faiss.METRIC_INNER_PRODUCT)
    index.train(data)
    index.add(data)
    return index


class _Shortlisted:
    """The binary shortlist (`apus.index.shortlist`) over a flat index, answering as a FAISS
    index does: scores and ids of the top `_K` of a `_LEG_K` search, as the vector leg asks."""

    def __init__(self, data: np.ndarray) -> None:
        import faiss

        from apus.index.shortlist import BinaryShortlist

        self.flat = faiss.IndexIDMap2(faiss.IndexFlatIP(data.shape[1]))
        self.flat.add_with_ids(data, np.arange(len(data), dtype=np.int64))
        self.shortlist = BinaryShortlist(self.flat)

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        found = self.shortlist.search(query[0], max(k, _LEG_K))
        ids = np.fromiter(found, dtype=np.int64, count=len(found))[:k]
        scores = np.fromiter(found.values(), dtype=np.float32, count=len(found))[:k]
        return scores[None, :], ids[None, :]

    def nbytes(self) -> int:
        """The flat index's bytes and the sign codes beside it (made in memory, never saved)."""
        return _index_bytes(self.flat) + len(self.shortlist) * self.shortlist.code_bytes


def _knob(index: faiss.Index, name: str, value: int) -> Callable[[], None]:
    """Sets efSearch (HNSW) or nprobe (IVF) before a search: indexes share one build."""
    import faiss

    if name == "efSearch":
        graph: Any = faiss.downcast_index(index)  # IndexHNSWFlat: FAISS's stubs lack .hnsw
        return lambda: setattr(graph.hnsw, "efSearch", value)
    ivf = faiss.extract_index_ivf(index)
    return lambda: setattr(ivf, "nprobe", value)


def candidates_for(
    data: np.ndarray, kinds: Sequence[str], hnsw_m: int = 32
) -> Iterable[_Candidate]:
    """Flat first (the reference), then each other kind asked for, built once each."""
    dims = data.shape[1]
    flat, seconds = _timed_build(lambda: _flat(data))
    yield _Candidate("flat", dims, flat, seconds)
    for codes in ("fp16", "sq8"):
        if codes in kinds:
            scalar, seconds = _timed_build(functools.partial(_scalar, data, codes))
            yield _Candidate(f"flat {codes}", dims, scalar, seconds)
    if "shortlist" in kinds:
        shortlisted, seconds = _timed_build(lambda: _Shortlisted(data))
        yield _Candidate(f"shortlist k{_LEG_K}", dims, shortlisted, seconds)
    if "hnsw" in kinds:
        hnsw, seconds = _timed_build(lambda: _hnsw(data, hnsw_m))
        for ef in (64, 128):
            label = f"hnsw M{hnsw_m} ef{ef}"
            yield _Candidate(label, dims, hnsw, seconds, _knob(hnsw, "efSearch", ef))
    if "ivf" in kinds:
        nlist = max(1, int(4 * math.sqrt(len(data))))
        ivf, seconds = _timed_build(lambda: _ivf(data, nlist))
        for nprobe in (8, 16):
            label = f"ivf{nlist} nprobe{nprobe}"
            yield _Candidate(label, dims, ivf, seconds, _knob(ivf, "nprobe", nprobe))


def _index_bytes(index: faiss.Index | _Shortlisted) -> int:
    import faiss

    if isinstance(index, _Shortlisted):
        return index.nbytes()
    return int(faiss.serialize_index(index).size)


def _figures(candidate: _Candidate, exact: _Candidate, sizes: dict[int, int]) -> IndexFigures:
    hits = sum(
        len(set(found.tolist()) & set(truth.tolist()))
        for found, truth in zip(candidate.found, exact.found, strict=True)
    )
    size = sizes.setdefault(id(candidate.index), _index_bytes(candidate.index))
    return IndexFigures(
        candidate.kind,
        candidate.dims,
        candidate.build_seconds,
        size,
        percentile(candidate.walls, 50),
        percentile(candidate.walls, 95),
        percentile(candidate.cpus, 50),
        percentile(candidate.cpus, 95),
        hits / max(1, _K * len(exact.found)),
    )


def run_vector_bench(
    vectors: np.ndarray,
    queries: np.ndarray,
    *,
    widths: Sequence[int] = (768, 512, 256),
    kinds: Sequence[str] = ("hnsw", "ivf"),
    source: str = "random",
    say: Callable[[str], None] = lambda _line: None,
) -> VectorBenchResult:
    """Build every kind at every width (truncating `vectors` and `queries`), then time each
    on every query, interleaved."""
    import faiss

    everything: list[_Candidate] = []
    by_width: dict[int, tuple[np.ndarray, _Candidate]] = {}
    for dims in widths:
        say(f"building the indexes at {dims} dimensions…")
        built = list(candidates_for(truncate(vectors, dims), kinds))
        everything += built
        by_width[dims] = (truncate(queries, dims), built[0])
    faiss.omp_set_num_threads(_SEARCH_THREADS)
    for number in range(len(queries)):
        turn = number % len(everything)
        for candidate in everything[turn:] + everything[:turn]:
            candidate.search(by_width[candidate.dims][0][number : number + 1])
    sizes: dict[int, int] = {}
    rows = [_figures(c, by_width[c.dims][1], sizes) for c in everything]
    return VectorBenchResult(len(vectors), len(queries), source, rows)


def vector_table(r: VectorBenchResult) -> list[str]:
    """The figures of `apus bench vectors`: one row per index kind and width."""
    lines = [
        f"{r.vectors} vectors ({r.source}), {r.queries} queries, k={_K}, one search thread; "
        "indexes alternate query by query",
        f"{'index':<20} {'dims':>5} {'build s':>8} {'MB':>7} {'wall p50':>9} {'p95':>6} "
        f"{'cpu p50':>8} {'p95':>6} {'recall@10':>9} {'vs flat 768':>11}",
    ]
    reference = next((row for row in r.rows if row.kind == "flat"), None)
    for row in r.rows:
        ratio = reference.wall_p50_ms / row.wall_p50_ms if reference and row.wall_p50_ms else 0.0
        lines.append(
            f"{row.kind:<20} {row.dims:>5} {row.build_seconds:>8.1f} {row.bytes / 1e6:>7.1f} "
            f"{row.wall_p50_ms:>9.2f} {row.wall_p95_ms:>6.2f} {row.cpu_p50_ms:>8.2f} "
            f"{row.cpu_p95_ms:>6.2f} {row.recall_at_10:>9.3f} {ratio:>10.1f}x"
        )
    lines.append("recall@10: of the flat index's top 10 at the same width; vs flat: p50 wall")
    return lines


def store_vectors(index_dir: Path) -> np.ndarray:
    """Every vector an index's store holds for its recorded embedding identity."""
    from apus.errors import ApusError
    from apus.index.identity import stored_identity
    from apus.index.store import Store

    if not Store.exists(index_dir):
        raise ApusError(f"{index_dir} holds no Apus index.", "give the folder of an index")
    store = Store(index_dir, readonly=True)
    try:
        identity = stored_identity(store)
        key = identity.key() if identity is not None else ""
        ids = sorted(store.vector_chunk_ids(key)) if key else []
        rows = [vector for _chunk, vector in store.vectors_for_chunks(key, ids)]
    finally:
        store.close()
    if not rows:
        raise ApusError(f"The index in {index_dir} holds no vectors.", "apus memory index")
    return np.vstack(rows).astype(np.float32)


def held_out(vectors: np.ndarray, queries: int, seed: int = 13) -> tuple[np.ndarray, np.ndarray]:
    """(indexed, queries): `queries` rows drawn at random and left out of the index, so no
    query finds itself."""
    order = np.random.default_rng(seed).permutation(len(vectors))
    count = min(queries, len(vectors) // 2)
    return vectors[order[count:]], vectors[order[:count]]
