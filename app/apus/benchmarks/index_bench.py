"""`apus bench index`: cold index, no-change re-sync and peak memory, against bare Whoosh."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from apus.benchmarks.measure import run_worker


@dataclass(frozen=True)
class IndexBenchResult:
    files: int
    chunks: int
    cold_seconds: float
    resync_seconds: float
    peak_rss_mb: float
    resync_peak_rss_mb: float
    bare_seconds: float
    bare_files: int
    bare_peak_rss_mb: float

    @property
    def files_per_s(self) -> float:
        return self.files / self.cold_seconds if self.cold_seconds else 0.0

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.cold_seconds if self.cold_seconds else 0.0

    @property
    def overhead_ratio(self) -> float:
        return self.cold_seconds / self.bare_seconds if self.bare_seconds else 0.0


def run_index_bench(corpus: Path) -> IndexBenchResult:
    with tempfile.TemporaryDirectory(prefix="apus-bench-") as scratch:
        index_dir = Path(scratch) / "apus"
        cold = run_worker(["apus-index", "--corpus", str(corpus), "--index-dir", str(index_dir)])
        again = run_worker(["apus-index", "--corpus", str(corpus), "--index-dir", str(index_dir)])
        bare = run_worker(
            ["bare-whoosh", "--corpus", str(corpus), "--index-dir", str(Path(scratch) / "bare")]
        )
    return IndexBenchResult(
        files=int(cold["files"]),
        chunks=int(cold["chunks"]),
        cold_seconds=cold["seconds"],
        resync_seconds=again["seconds"],
        peak_rss_mb=cold["peak_rss_mb"],
        resync_peak_rss_mb=again["peak_rss_mb"],
        bare_seconds=bare["seconds"],
        bare_files=int(bare["files"]),
        bare_peak_rss_mb=bare["peak_rss_mb"],
    )
