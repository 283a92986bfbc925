"""`apus bench search`: query latency percentiles over many realistic queries."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from apus.benchmarks.measure import peak_rss_mb, percentile
from apus.config import Settings, load_settings
from apus.index.store import Store
from apus.search.engine import SearchOptions


@dataclass(frozen=True)
class LatencyFigures:
    mode: str
    queries: int
    p50_ms: float
    p95_ms: float
    mean_ms: float
    leg_p50_ms: dict[str, float]


@dataclass(frozen=True)
class SearchBenchResult:
    files: int
    chunks: int
    index_seconds: float
    figures: list[LatencyFigures]
    peak_rss_mb: float


def bench_settings(corpus: Path, index_dir: Path, provider: str, model_path: str) -> Settings:
    overrides: dict[str, object] = {
        "vault": str(corpus),
        "memory.search.provider": provider,
        "memory.search.store.path": str(index_dir),
    }
    if model_path:
        overrides["memory.search.local.modelPath"] = model_path
    return load_settings(overrides=overrides)


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


def run_search_bench(
    corpus: Path,
    index_dir: Path,
    *,
    queries: int = 300,
    modes: tuple[str, ...] = ("keyword",),
    provider: str = "none",
    model_path: str = "",
) -> SearchBenchResult:
    from apus.core import open_searcher, sync_index

    settings = bench_settings(corpus, index_dir, provider, model_path)
    started = time.perf_counter()
    sync_index(settings)
    index_seconds = time.perf_counter() - started
    store = Store(index_dir, readonly=True)
    try:
        files, chunks = store.counts()
        texts = sample_queries(store, queries)
    finally:
        store.close()
    searcher = open_searcher(settings)
    figures = []
    try:
        for mode in modes:
            options = SearchOptions(mode=mode)  # type: ignore[arg-type]
            for text in texts[:10]:  # warm caches and the server
                searcher.search(text, options)
            timings: list[float] = []
            legs: dict[str, list[float]] = {}
            for text in texts:
                begin = time.perf_counter()
                response = searcher.search(text, options)
                timings.append((time.perf_counter() - begin) * 1000)
                for name, leg in response.legs.items():
                    if leg.ran:
                        legs.setdefault(name, []).append(leg.ms)
            figures.append(
                LatencyFigures(
                    mode=mode,
                    queries=len(timings),
                    p50_ms=percentile(timings, 50),
                    p95_ms=percentile(timings, 95),
                    mean_ms=sum(timings) / max(len(timings), 1),
                    leg_p50_ms={name: percentile(v, 50) for name, v in legs.items()},
                )
            )
    finally:
        searcher.close()
    return SearchBenchResult(files, chunks, index_seconds, figures, peak_rss_mb())
