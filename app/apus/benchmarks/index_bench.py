"""`apus bench index`: cold index, no-change re-sync and peak memory, against a bare Whoosh
writer and an FTS5 insert of the same chunks."""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apus.benchmarks.measure import run_worker

# Rounds of (cold index, bare Whoosh, FTS5), interleaved so that a change in the machine's
# load falls on all three alike; medians are reported.
DEFAULT_ROUNDS = 3


@dataclass(frozen=True)
class IndexBenchResult:
    rounds: int
    files: int
    chunks: int
    cold_seconds: float
    cold_cpu_seconds: float
    resync_seconds: float
    resync_cpu_seconds: float
    peak_rss_mb: float
    resync_peak_rss_mb: float
    bare_seconds: float
    bare_cpu_seconds: float
    bare_files: int
    bare_peak_rss_mb: float
    fts5_seconds: float
    fts5_cpu_seconds: float

    @property
    def files_per_s(self) -> float:
        return self.files / self.cold_seconds if self.cold_seconds else 0.0

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.cold_seconds if self.cold_seconds else 0.0

    @property
    def overhead_ratio(self) -> float:
        """Apus's cold index over the bare Whoosh writer, in CPU (load-independent)."""
        return self.cold_cpu_seconds / self.bare_cpu_seconds if self.bare_cpu_seconds else 0.0


def run_index_bench(corpus: Path, rounds: int = DEFAULT_ROUNDS) -> IndexBenchResult:
    colds: list[dict[str, float]] = []
    bares: list[dict[str, float]] = []
    fts5s: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="apus-bench-") as scratch:
        for number in range(rounds):
            index_dir = Path(scratch) / f"apus-{number}"
            colds.append(_step("apus-index", corpus, index_dir))
            # The references write the chunks this round's cold index made.
            reference = ["--chunks-from", str(index_dir)]
            bares.append(_step("bare-whoosh", corpus, Path(scratch) / f"bare-{number}", reference))
            fts5s.append(_step("fts5", corpus, Path(scratch) / f"fts5-{number}", reference))
        again = _step("apus-index", corpus, Path(scratch) / "apus-0")
    return IndexBenchResult(
        rounds=rounds,
        files=int(colds[0]["files"]),
        chunks=int(colds[0]["chunks"]),
        cold_seconds=_median(colds, "seconds"),
        cold_cpu_seconds=_median(colds, "cpu_seconds"),
        resync_seconds=again["seconds"],
        resync_cpu_seconds=again["cpu_seconds"],
        peak_rss_mb=_median(colds, "peak_rss_mb"),
        resync_peak_rss_mb=again["peak_rss_mb"],
        bare_seconds=_median(bares, "seconds"),
        bare_cpu_seconds=_median(bares, "cpu_seconds"),
        bare_files=int(bares[0]["files"]),
        bare_peak_rss_mb=_median(bares, "peak_rss_mb"),
        fts5_seconds=_median(fts5s, "seconds"),
        fts5_cpu_seconds=_median(fts5s, "cpu_seconds"),
    )


def _step(
    name: str, corpus: Path, index_dir: Path, extra: list[str] | None = None
) -> dict[str, Any]:
    command = [name, "--corpus", str(corpus), "--index-dir", str(index_dir), *(extra or [])]
    return run_worker(command)


def _median(figures: list[dict[str, float]], key: str) -> float:
    return statistics.median(figure[key] for figure in figures)
