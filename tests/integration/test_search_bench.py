"""`apus bench search` with the tiny real GGUF: Apus end to end, its keyword leg and an FTS5
reference over the same chunks, interleaved, in wall and thread CPU time, with the query
embedding timed apart from the hybrid search."""

from __future__ import annotations

import re
from pathlib import Path

from support.tiny_cross_encoder import build
from support.vaults import run_apus, write_note

ROW = (
    r"^{name}\s+(?P<queries>\d+) queries\s+wall p50 (?P<p50>[\d.]+) ms\s+p95 (?P<p95>[\d.]+) ms"
    r"\s+\| cpu p50 (?P<cpu50>[\d.]+) ms\s+p95 (?P<cpu95>[\d.]+) ms"
)


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    for number in range(12):
        write_note(
            corpus,
            f"notes/n{number}.md",
            f"# Note {number}\n\nThe router closet holds box {number} and its cables.\n",
        )
    return corpus


def _rows(out: str, names: tuple[str, ...], queries: int) -> None:
    for name in names:
        row = re.search(ROW.format(name=re.escape(name)), out, re.M)
        assert row, (name, out)
        assert int(row["queries"]) == queries
        assert 0 < float(row["p50"]) <= float(row["p95"])
        assert float(row["cpu50"]) <= float(row["cpu95"])


def test_the_search_benchmark_times_keyword_and_hybrid(tmp_path: Path, tiny_model: Path) -> None:
    out = run_apus(
        "bench",
        "search",
        "--corpus",
        _corpus(tmp_path),
        "--model",
        tiny_model,
        "--synthetic-vectors",
        "--queries",
        "5",
        timeout=300,
    ).stdout
    assert re.search(r"^index: 12 files, 12 chunks", out, re.M), out
    assert "the model's query vectors" in out
    # The query embedding runs before the searches, on its own clock, as the vector leg does.
    _rows(out, ("fts5", "keyword-leg", "keyword", "hybrid", "vector-leg", "embedding"), 5)
    for ratio in ("keyword / fts5", "keyword-leg / fts5", "hybrid / keyword"):
        assert re.search(rf"^{ratio}: p50 wall [\d.]+x\s+cpu [\d.]+x", out, re.M), (ratio, out)
    assert re.search(r"^peak RSS \d+ MB", out, re.M), out


def test_the_search_benchmark_times_the_reranker_at_each_count(tmp_path: Path) -> None:
    model = build(tmp_path / "reranker")
    corpus = _corpus(tmp_path)
    out = run_apus(
        "bench",
        "search",
        "--corpus",
        corpus,
        "--queries",
        "4",
        "--rerank",
        "2,5",
        "--rerank-model",
        model,
        timeout=300,
    ).stdout
    _rows(out, ("keyword", "rerank@2", "rerank@5"), 4)
    assert "(Searcher keyword + rerank of 5 passages)" in out
    for ratio in ("rerank@2 / keyword", "rerank@5 / keyword"):
        assert re.search(rf"^{ratio}: p50 wall [\d.]+x\s+cpu [\d.]+x", out, re.M), (ratio, out)
    refused = run_apus("bench", "search", "--corpus", corpus, "--rerank", "ten", expect=2)
    assert "give counts like 10,20,40" in refused.stderr


def test_synthetic_vectors_without_a_model_use_random_query_vectors(tmp_path: Path) -> None:
    out = run_apus(
        "bench", "search", "--corpus", _corpus(tmp_path), "--synthetic-vectors", "--queries", "4"
    ).stdout
    assert "768 dims, random query vectors" in out
    _rows(out, ("fts5", "keyword-leg", "keyword", "hybrid", "vector-leg"), 4)
    assert not re.search(r"^embedding\s", out, re.M)  # nothing was embedded


def test_hybrid_without_vectors_is_refused(tmp_path: Path) -> None:
    done = run_apus("bench", "search", "--corpus", _corpus(tmp_path), "--mode", "hybrid", expect=1)
    assert done.returncode == 1
    assert "need vectors" in done.stderr
    assert "--synthetic-vectors" in done.stderr


def test_synthetic_vectors_are_searched_at_the_width_asked_for(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    out = run_apus(
        "bench",
        "search",
        "--corpus",
        corpus,
        "--synthetic-vectors",
        "--vector-dims",
        "256",
        "--queries",
        "4",
    ).stdout
    assert "256 dims, random query vectors" in out
    _rows(out, ("hybrid", "vector-leg"), 4)
    wide = run_apus(
        "bench",
        "search",
        "--corpus",
        corpus,
        "--synthetic-vectors",
        "--vector-dims",
        "1024",
        expect=1,
    )
    assert "memory.search.vectorDims 1024 is wider than the model's 768 dimensions" in (wide.stderr)


VECTOR_ROW = (
    r"^{kind}\s+{dims}\s+(?P<build>[\d.]+)\s+(?P<mb>[\d.]+)\s+(?P<p50>[\d.]+)\s+"
    r"(?P<p95>[\d.]+)\s+(?P<cpu50>[\d.]+)\s+(?P<cpu95>[\d.]+)\s+(?P<recall>[\d.]+)"
)


def test_the_vector_benchmark_compares_index_kinds_and_widths() -> None:
    out = run_apus(
        "bench",
        "vectors",
        "--vectors",
        "600",
        "--queries",
        "20",
        "--dims",
        "64,32",
        timeout=300,
    ).stdout
    assert out.startswith("600 vectors (random), 20 queries, k=10"), out
    rows = {}
    kinds = ("flat", "shortlist k200", "hnsw M32 ef64", "hnsw M32 ef128", "ivf97 nprobe8")
    for kind in (*kinds, "ivf97 nprobe16"):
        for dims in (64, 32):
            row = re.search(VECTOR_ROW.format(kind=re.escape(kind), dims=dims), out, re.M)
            assert row, (kind, dims, out)
            rows[kind, dims] = row
    for dims in (64, 32):
        assert float(rows["flat", dims]["recall"]) == 1.0  # the reference itself
        # 580 vectors are fewer than a 200-vector search's shortlist: every one is scored.
        assert float(rows["shortlist k200", dims]["recall"]) == 1.0
    # Bytes follow the width: a flat index at half the width is half the size.
    assert float(rows["flat", 32]["mb"]) < float(rows["flat", 64]["mb"])
    # A wider search than the vectors hold is refused.
    done = run_apus("bench", "vectors", "--vectors", "100", "--dims", "1024", expect=2)
    assert "widths must be 1..768" in done.stderr
