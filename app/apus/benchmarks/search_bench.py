"""`apus bench search`: query latency percentiles over many realistic queries, side by side
with an SQLite FTS5 reference over the same chunks.

Every system answers each query in turn (the order rotates query by query), so a loaded
machine slows them alike; each is timed in wall time and in thread CPU time (the search's
own threads only), and the ratios are of figures from the same run.

Hybrid latency at 100k chunks would need days of CPU embedding, so `synthetic_vectors` fills
FAISS with random unit vectors instead: a flat inner-product search costs the same whatever
the values. The query vectors are embedded by the model before the timed runs when one is
given (that embedding is timed apart), random unit vectors otherwise, so the hybrid figure is
the search without the query embedding. The figures are for latency only; they say nothing
about quality.

With `rerank_candidates`, the second stage is timed too: a keyword search whose top N
candidates the reranking model reads (no deadline: its whole cost), for each N, beside the
same search without it.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from apus.benchmarks.measure import peak_rss_mb, percentile
from apus.config import Settings, load_settings
from apus.embed.base import EmbeddingIdentity
from apus.errors import ApusError
from apus.index.keyword import KeywordIndex
from apus.index.store import Store
from apus.index.vector_layout import layout_for
from apus.index.vectors import VectorSearch
from apus.search.engine import Searcher
from apus.search.options import Mode, SearchOptions
from apus.search.query import ParsedQuery
from apus.search.rerank.stage import Reranker
from apus.search.vector_leg import VectorAvailability

if TYPE_CHECKING:
    import faiss

    from apus.memory import Memory

# What the FTS5 reference shows per query, as a search list does: the top of its ranking,
# and snippets of the first ten.
_SHOWN = 10
_FTS_FILE = "fts5-reference.sqlite"
# EmbeddingGemma's width, the shipped model's: random query vectors stand in for its output
# (and are searched at its default width, as its vectors would be).
_SYNTHETIC_DIMS = 768
_SYNTHETIC_BLOCK = 8192
_SYNTHETIC_IDENTITY = EmbeddingIdentity("synthetic", "random", "", "embeddinggemma@1", 768)


@dataclass(frozen=True)
class Timing:
    """One system's latency over the timed queries: wall and thread CPU, in ms."""

    name: str
    label: str
    queries: int
    wall_p50_ms: float
    wall_p95_ms: float
    cpu_p50_ms: float
    cpu_p95_ms: float


@dataclass(frozen=True)
class SearchBenchResult:
    files: int
    chunks: int
    index_seconds: float
    timings: list[Timing]
    peak_rss_mb: float
    synthetic_vectors: bool
    embedded_queries: bool  # the synthetic run's query vectors came from the model
    vector_width: int = 0  # the synthetic vectors' width (0: none)

    def timing(self, name: str) -> Timing | None:
        return next((t for t in self.timings if t.name == name), None)


class BenchSetupError(ApusError):
    """A combination of options the benchmark cannot measure honestly."""


def bench_settings(corpus: Path, index_dir: Path, provider: str, model_path: str) -> Settings:
    overrides: dict[str, object] = {
        "vault": str(corpus),
        "memory.search.provider": provider,
        "memory.search.store.path": str(index_dir),
    }
    if model_path:
        overrides["memory.search.local.modelPath"] = model_path
    return load_settings(overrides=overrides)


def replicate_corpus(corpus: Path, target: Path, copies: int) -> Path:
    """`copies` copies of the corpus side by side, for a larger index than the corpus gives."""
    if copies <= 1:
        return corpus
    for number in range(copies):
        destination = target / f"copy{number}"
        if not destination.exists():
            shutil.copytree(corpus, destination)
    return target


def sample_queries(store: Store, count: int, seed: int = 7) -> list[str]:
    """Queries made of 1-3 words taken from random chunks: each has at least one match."""
    rng = random.Random(seed)
    chunks = list(store.iter_chunks())
    queries: list[str] = []
    while chunks and len(queries) < count:
        words = [w for w in rng.choice(chunks).text.split() if w.isalpha() and len(w) > 3]
        if words:
            queries.append(" ".join(rng.sample(words, min(len(words), rng.randint(1, 3)))))
    return queries


class _PrecomputedVectorLeg:
    """FAISS search for query vectors made before the timed runs; it times its own search
    (wall and the CPU of the pool thread it runs on), which the caller's clock cannot see."""

    def __init__(self, index: faiss.IndexIDMap, query_vectors: dict[str, np.ndarray]) -> None:
        self.index = index
        self.scan = VectorSearch(index)  # as the vector leg searches vectors.faiss
        self.query_vectors = query_vectors
        self.last_wall_ms = 0.0
        self.last_cpu_ms = 0.0

    def availability(self) -> VectorAvailability:
        return VectorAvailability(True)

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> dict[int, float]:
        wall, cpu = time.perf_counter(), time.thread_time()
        found = self.scan(self.query_vectors[query], k, allowed)
        self.last_cpu_ms = (time.thread_time() - cpu) * 1000
        self.last_wall_ms = (time.perf_counter() - wall) * 1000
        return found

    def neighbours(self, chunk_ids: list[int], k: int) -> dict[int, float]:
        raise NotImplementedError("the search benchmark times searches, not related notes")

    def close(self) -> None:
        return None


def _synthetic_leg(
    store: Store,
    texts: list[str],
    vault: Path,
    index_dir: Path,
    model_path: str,
    vector_dims: int = 0,
) -> tuple[_PrecomputedVectorLeg, Timing | None]:
    """Random unit vectors in FAISS, and query vectors: the model's when one is given (each
    embedding timed, before and apart from the searches), random unit vectors otherwise;
    `vector_dims` truncates both as memory.search.vectorDims does (0: full width)."""
    if not model_path:
        rng = np.random.default_rng(11)
        layout = layout_for(_SYNTHETIC_IDENTITY, vector_dims)
        rows = layout.fit(_unit_rows(rng, len(texts), _SYNTHETIC_DIMS))
        vectors = {text: rows[i] for i, text in enumerate(texts)}
        return _PrecomputedVectorLeg(_synthetic_faiss(store, layout.dims), vectors), None
    from apus.embed.providers import resolve_provider

    model_settings = bench_settings(vault, index_dir, "local", model_path)
    embedder = resolve_provider(model_settings.search).embedder
    if embedder is None:
        raise BenchSetupError(
            "The model cannot be used for the vector leg.", "apus memory status --deep"
        )
    walls: list[float] = []
    cpus: list[float] = []
    vectors = {}
    try:
        embedder.embed([embedder.query_text(texts[0])], kind="query")  # start the server
        for text in texts:
            wall, cpu = time.perf_counter(), time.thread_time()
            vectors[text] = embedder.embed([embedder.query_text(text)], kind="query")[0]
            cpus.append((time.thread_time() - cpu) * 1000)
            walls.append((time.perf_counter() - wall) * 1000)
        layout = layout_for(embedder.identity, vector_dims)
    finally:
        embedder.close()
    vectors = {text: layout.fit(vector) for text, vector in vectors.items()}
    embedding = Timing(
        "embedding",
        "query embedding alone (before the searches; CPU is this process's share)",
        len(walls),
        percentile(walls, 50),
        percentile(walls, 95),
        percentile(cpus, 50),
        percentile(cpus, 95),
    )
    return _PrecomputedVectorLeg(_synthetic_faiss(store, layout.dims), vectors), embedding


def _unit_rows(rng: np.random.Generator, count: int, dims: int) -> np.ndarray:
    vectors = rng.standard_normal((count, dims), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def _synthetic_faiss(store: Store, dims: int) -> faiss.IndexIDMap:
    import faiss

    ids = np.fromiter((c.id for c in store.iter_chunks()), dtype=np.int64)
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(dims))
    rng = np.random.default_rng(7)
    # Added a block at a time: the index holds the only whole copy of the vectors.
    for start in range(0, len(ids), _SYNTHETIC_BLOCK):
        block = ids[start : start + _SYNTHETIC_BLOCK]
        index.add_with_ids(_unit_rows(rng, len(block), dims), block)
    return index


class _Fts5Reference:
    """SQLite FTS5 over the store's chunk texts: `bm25()` top k, then `snippet()` of the top
    ten, what a plain full-text search answers a search list with."""

    def __init__(self, path: Path, store: Store) -> None:
        generation = str(store.generation())
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
        row = self.db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        if row is None or row[0] != generation:
            self._build(store, generation)

    def _build(self, store: Store, generation: str) -> None:
        with self.db:
            self.db.execute("DROP TABLE IF EXISTS chunks")
            self.db.execute(
                "CREATE VIRTUAL TABLE chunks USING fts5(text, "
                "tokenize = 'porter unicode61 remove_diacritics 2')"
            )
            self.db.executemany(
                "INSERT INTO chunks(rowid, text) VALUES (?, ?)",
                ((c.id, c.text) for c in store.iter_chunks()),
            )
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('generation', ?)", (generation,))

    def search(self, terms: Sequence[str], k: int) -> list[str]:
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        if not match:
            return []
        rows = self.db.execute(
            "SELECT rowid FROM chunks WHERE chunks MATCH ? ORDER BY bm25(chunks) LIMIT ?",
            (match, k),
        ).fetchall()
        shown = [row[0] for row in rows[:_SHOWN]]
        marks = ",".join("?" * len(shown)) or "NULL"
        return [
            row[0]
            for row in self.db.execute(
                f"SELECT snippet(chunks, 0, '[', ']', '…', 40) FROM chunks "
                f"WHERE chunks MATCH ? AND rowid IN ({marks})",
                (match, *shown),
            )
        ]

    def close(self) -> None:
        self.db.close()


def _held_to(
    search: Callable[[str, SearchOptions], object], options: SearchOptions
) -> Callable[[str], object]:
    """`search` held to `options` (a lambda made in a loop would see the last ones)."""
    return lambda text: search(text, options)


@dataclass
class _System:
    """One thing timed per query: `run` answers the query; `extra_cpu` is CPU it spent on
    threads other than the caller's (the vector leg's pool thread)."""

    name: str
    label: str
    run: Callable[[str], object]
    extra_cpu: Callable[[], float] = lambda: 0.0
    walls: list[float] | None = None
    cpus: list[float] | None = None

    def time(self, text: str) -> None:
        wall, cpu = time.perf_counter(), time.thread_time()
        self.run(text)
        cpu_ms = (time.thread_time() - cpu) * 1000 + self.extra_cpu()
        wall_ms = (time.perf_counter() - wall) * 1000
        self.walls = [*(self.walls or []), wall_ms]
        self.cpus = [*(self.cpus or []), cpu_ms]

    def figures(self) -> Timing:
        walls, cpus = self.walls or [], self.cpus or []
        return Timing(
            self.name,
            self.label,
            len(walls),
            percentile(walls, 50),
            percentile(walls, 95),
            percentile(cpus, 50),
            percentile(cpus, 95),
        )


def _vector_leg_timing(walls: list[float], cpus: list[float]) -> Timing:
    return Timing(
        "vector-leg",
        "vector leg alone (FAISS, its own clock)",
        len(walls),
        percentile(walls, 50),
        percentile(walls, 95),
        percentile(cpus, 50),
        percentile(cpus, 95),
    )


def _vector_systems(
    modes: tuple[Mode, ...],
    memory: Memory,
    searcher: Searcher | None,
    leg: _PrecomputedVectorLeg | None,
) -> list[_System]:
    """The hybrid and vector systems asked for: with synthetic vectors a Searcher whose
    query vectors are made beforehand, else the session (query embedding included)."""
    systems: list[_System] = []
    vector_modes: tuple[Mode, ...] = ("hybrid", "vector")
    for mode in vector_modes:
        if mode not in modes:
            continue
        mode_options = SearchOptions(mode=mode)
        if searcher is not None and leg is not None:
            label = f"Searcher {mode}, no query embedding"
            timed = _held_to(searcher.search, mode_options)
            systems.append(_System(mode, label, timed, lambda: leg.last_cpu_ms))
        else:
            label = f"Memory.search {mode}, query embedding included"
            systems.append(_System(mode, label, _held_to(memory.search, mode_options)))
    return systems


def _interleaved(
    systems: list[_System], texts: list[str], leg: _PrecomputedVectorLeg | None
) -> tuple[list[float], list[float]]:
    """Time every system on every query, the order rotating query by query (so load and
    caches fall on all alike); returns the vector leg's own wall and CPU times."""
    vector_walls: list[float] = []
    vector_cpus: list[float] = []
    for text in texts[:10]:  # warm caches and the server
        for system in systems:
            system.run(text)
    for number, text in enumerate(texts):
        turn = number % len(systems)
        for system in systems[turn:] + systems[:turn]:
            system.time(text)
            if system.name == "hybrid" and leg is not None:
                vector_walls.append(leg.last_wall_ms)
                vector_cpus.append(leg.last_cpu_ms)
    return vector_walls, vector_cpus


def _reference_systems(
    texts: list[str],
    fts: _Fts5Reference,
    keyword: KeywordIndex,
    candidates: int,
    generation: int,
) -> list[_System]:
    """FTS5 over the same chunks, and the keyword leg alone: what the search is held to."""
    terms = {text: ParsedQuery.parse(text).terms for text in texts}
    return [
        _System(
            "fts5", "FTS5 bm25() top k + 10 snippet()", lambda t: fts.search(terms[t], candidates)
        ),
        _System(
            "keyword-leg",
            "keyword leg alone (bm25 top k)",
            lambda t: keyword.search(list(terms[t]), candidates, generation),
        ),
    ]


def _rerank_systems(
    settings: Settings, candidates: Sequence[int], model_path: str
) -> tuple[list[_System], Callable[[], None]]:
    """A keyword search reranking its top N candidates, for each N, sharing one model (the
    catalogue's, or `model_path`), given all the time it needs; and what closes them."""
    from apus.search.rerank.scorer import make_scorer

    overrides: dict[str, object] = {
        "vault": settings.vault,
        "memory.search.provider": "none",
        "memory.search.store.path": settings.search.store.path,
        "memory.search.rerank.enabled": True,
        "memory.search.rerank.deadlineMs": 120_000,
    }
    if model_path:
        overrides["memory.search.rerank.local.modelPath"] = model_path
    base = load_settings(overrides=overrides)
    shared = Reranker(lambda: make_scorer(base.search.rerank))
    systems, searchers = [], []
    for count in candidates:
        tuned = load_settings(overrides={**overrides, "memory.search.rerank.candidates": count})
        searcher = Searcher(tuned, reranker=shared)
        searchers.append(searcher)
        label = f"Searcher keyword + rerank of {count} passages"
        run = _held_to(searcher.search, SearchOptions(mode="keyword"))
        systems.append(_System(f"rerank@{count}", label, run))

    def close() -> None:
        for searcher in searchers:
            searcher.close()
        shared.close()

    return systems, close


def _refuse_without_vectors(modes: tuple[Mode, ...], model_path: str, synthetic: bool) -> None:
    if any(mode != "keyword" for mode in modes) and not (model_path or synthetic):
        raise BenchSetupError(
            "Vector and hybrid modes need vectors to search.",
            "add --synthetic-vectors (random vectors, latency only) or --model MODEL.gguf",
        )


def run_search_bench(
    corpus: Path,
    index_dir: Path,
    *,
    queries: int = 300,
    modes: tuple[Mode, ...] = ("keyword",),
    model_path: str = "",
    synthetic_vectors: bool = False,
    copies: int = 1,
    vector_dims: int = 0,
    rerank_candidates: Sequence[int] = (),
    rerank_model: str = "",
) -> SearchBenchResult:
    """Index the corpus (or reuse `index_dir`), then time every system on every query;
    `rerank_candidates`: also a keyword search reranking that many (the catalogue model, or
    the ONNX file `rerank_model`)."""
    from apus.memory import Memory

    _refuse_without_vectors(modes, model_path, synthetic_vectors)
    vault = replicate_corpus(corpus, index_dir.parent / "vault", copies)
    provider = "local" if model_path and not synthetic_vectors else "none"
    settings = bench_settings(vault, index_dir, provider, model_path)
    memory = Memory(settings=settings)
    started = time.perf_counter()
    memory.sync()
    index_seconds = time.perf_counter() - started
    store = Store(index_dir, readonly=True)
    try:
        files, chunks = store.counts()
        texts = sample_queries(store, queries)
        generation = store.generation()
        fts = _Fts5Reference(index_dir.parent / _FTS_FILE, store)
        leg, leg_embedding = (
            _synthetic_leg(store, texts, vault, index_dir, model_path, vector_dims)
            if synthetic_vectors
            else (None, None)
        )
    finally:
        store.close()
    keyword = KeywordIndex(index_dir)
    # Synthetic vectors need a Searcher of our own; the keyword figures are what the CLI runs.
    searcher = Searcher(settings, vector_leg=leg) if leg is not None else None
    candidates = SearchOptions().resolve(settings.search.query).candidates
    systems = _reference_systems(texts, fts, keyword, candidates, generation)
    if "keyword" in modes:
        keyword_only = _held_to(memory.search, SearchOptions(mode="keyword"))
        systems.append(_System("keyword", "Memory.search keyword", keyword_only))
    systems += _vector_systems(modes, memory, searcher, leg)
    reranking, close_reranking = _rerank_systems(settings, rerank_candidates, rerank_model)
    systems += reranking
    closers = [close_reranking, keyword.close, fts.close, memory.close]
    try:
        vector_walls, vector_cpus = _interleaved(systems, texts, leg)
    finally:
        if searcher is not None:
            searcher.close()
        for close in closers:
            close()
    timings = [system.figures() for system in systems]
    if vector_walls:
        timings.append(_vector_leg_timing(vector_walls, vector_cpus))
    if leg_embedding is not None:
        timings.append(leg_embedding)
    return SearchBenchResult(
        files,
        chunks,
        index_seconds,
        timings,
        peak_rss_mb(),
        synthetic_vectors,
        bool(model_path),
        int(leg.index.d) if leg is not None else 0,
    )
