"""`apus bench search` with the tiny real GGUF: keyword and hybrid figures through the real
managed server, with the query embedding timed apart."""

from __future__ import annotations

import re
from pathlib import Path

from .helpers import run_apus, write_note

FIGURES = (
    r"^{mode}\s+(?P<queries>\d+) queries\s+p50 (?P<p50>[\d.]+) ms\s+p95 (?P<p95>[\d.]+) ms"
    r"\s+\| without query embedding p50 [\d.]+ ms\s+p95 [\d.]+ ms"
)


def test_the_search_benchmark_times_keyword_and_hybrid(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "corpus"
    for number in range(12):
        write_note(
            corpus,
            f"notes/n{number}.md",
            f"# Note {number}\n\nThe router closet holds box {number} and its cables.\n",
        )
    out = run_apus(
        "bench",
        "search",
        "--corpus",
        corpus,
        "--model",
        tiny_model,
        "--synthetic-vectors",
        "--queries",
        "5",
        timeout=300,
    ).stdout
    assert re.search(r"^index: 12 files, 12 chunks", out, re.M), out
    for mode in ("keyword", "hybrid"):
        row = re.search(FIGURES.format(mode=mode), out, re.M)
        assert row, (mode, out)
        assert int(row["queries"]) == 5
        assert 0 < float(row["p50"]) <= float(row["p95"])
    assert "vector p50" in out  # the hybrid row reports its vector leg
