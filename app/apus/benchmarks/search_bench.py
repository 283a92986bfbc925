"""`apus bench search`: query latency percentiles over many realistic queries.

Hybrid latency at 100k chunks would need days of CPU embedding, so `synthetic_vectors` fills
FAISS with random unit vectors instead: a flat inner-product search costs the same whatever
the values, and the query embedding still goes through the real model and server. The
figures are for latency only; they say nothing about quality.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from apus.benchmarks.measure import peak_rss_mb, percentile
from apus.config import Settings, load_settings
from apus.index.store import Store
from apus.index.vectors import nearest
from apus.search.engine import Searcher, SearchResponse
from apus.search.options import Mode, SearchOptions
from apus.search.vector_leg import VectorAvailability

if TYPE_CHECKING:
    import faiss

    from apus.embed.base import Embedder


@dataclass(frozen=True)
class LatencyFigures:
    mode: Mode
    queries: int
    p50_ms: float
    p95_ms: float
    p50_without_embedding_ms: float
    p95_without_embedding_ms: float
    leg_p50_ms: dict[str, float]


@dataclass(frozen=True)
class SearchBenchResult:
    files: int
    chunks: int
    index_seconds: float
    figures: list[LatencyFigures]
    peak_rss_mb: float
    synthetic_vectors: bool


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


class _TimedVectorLeg:
    """Real query embedding + FAISS search; records the embedding time of each query."""

    def __init__(self, embedder: Embedder, vectors: faiss.Index) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.last_embed_ms = 0.0

    def availability(self) -> VectorAvailability:
        return VectorAvailability(True)

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> dict[int, float]:
        started = time.perf_counter()
        vector = self.embedder.embed([self.embedder.query_text(query)], kind="query")[0]
        self.last_embed_ms = (time.perf_counter() - started) * 1000
        return nearest(self.vectors, vector, k, allowed)

    def neighbours(self, chunk_ids: list[int], k: int) -> dict[int, float]:
        raise NotImplementedError("the search benchmark times searches, not related notes")

    def close(self) -> None:
        self.embedder.close()


def _synthetic_faiss(store: Store, dims: int) -> faiss.Index:
    import faiss

    ids = np.fromiter((c.id for c in store.iter_chunks()), dtype=np.int64)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((len(ids), dims), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = faiss.IndexIDMap2(faiss.IndexFlatIP(dims))
    index.add_with_ids(vectors, ids)
    return index


def run_search_bench(
    corpus: Path,
    index_dir: Path,
    *,
    queries: int = 300,
    modes: tuple[Mode, ...] = ("keyword",),
    model_path: str = "",
    synthetic_vectors: bool = False,
    copies: int = 1,
) -> SearchBenchResult:
    from apus.embed.providers import resolve_provider
    from apus.memory import Memory

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
        leg: _TimedVectorLeg | None = None
        if synthetic_vectors and model_path:
            model_settings = bench_settings(vault, index_dir, "local", model_path)
            embedder = resolve_provider(model_settings.search).embedder
            if embedder is None:
                raise RuntimeError("the model cannot be used for the vector leg")
            leg = _TimedVectorLeg(embedder, _synthetic_faiss(store, embedder.identity.dims))
    finally:
        store.close()
    # Synthetic vectors need a Searcher of our own; otherwise time what the CLI runs.
    searcher = Searcher(settings, vector_leg=leg) if leg is not None else None
    search = searcher.search if searcher is not None else memory.search
    figures = []
    try:
        for mode in modes:
            figures.append(_time_mode(search, mode, texts, leg))
    finally:
        if searcher is not None:
            searcher.close()
        memory.close()
    return SearchBenchResult(
        files, chunks, index_seconds, figures, peak_rss_mb(), synthetic_vectors
    )


def _time_mode(
    search: Callable[[str, SearchOptions], SearchResponse],
    mode: Mode,
    texts: list[str],
    leg: _TimedVectorLeg | None,
) -> LatencyFigures:
    options = SearchOptions(mode=mode)
    for text in texts[:10]:  # warm caches and the server
        search(text, options)
    timings: list[float] = []
    without: list[float] = []
    legs: dict[str, list[float]] = {}
    for text in texts:
        begin = time.perf_counter()
        response = search(text, options)
        elapsed = (time.perf_counter() - begin) * 1000
        timings.append(elapsed)
        embed_ms = leg.last_embed_ms if leg is not None and mode != "keyword" else 0.0
        without.append(elapsed - embed_ms)
        for name, report in response.legs.items():
            if report.ran:
                legs.setdefault(name, []).append(report.ms)
    return LatencyFigures(
        mode=mode,
        queries=len(timings),
        p50_ms=percentile(timings, 50),
        p95_ms=percentile(timings, 95),
        p50_without_embedding_ms=percentile(without, 50),
        p95_without_embedding_ms=percentile(without, 95),
        leg_p50_ms={name: percentile(v, 50) for name, v in legs.items()},
    )
