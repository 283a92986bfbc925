"""`apus eval` on a tiny BEIR-layout collection: settings variants, query halves, JSON, and the
textbook BM25 reference beside the product's keyword leg."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

from apus.benchmarks.beir import parse_variant, select_queries
from apus.benchmarks.rerank_scores import scores_file
from apus.benchmarks.textbook_bm25 import TextbookBm25
from apus.errors import ConfigError
from support.tiny_cross_encoder import build
from support.vaults import run_apus, run_json

DOCS = {
    "d1": ("Herons", "The grey heron fishes at dawn in the shallow canal."),
    "d2": ("Kestrels", "A kestrel hovers over the verge, watching for voles."),
    "d3": ("Sourdough", "Feed the starter the evening before baking bread."),
    "d4": ("Routers", "The router hands out addresses on the home network."),
    "d5": ("Canal walk", "Ducks, coots and a swan along the canal towpath."),
    "d6": ("Voles", "Field voles live in long grass and make runways."),
}
QUERIES = {
    "1": "heron fishing at dawn",
    "2": "kestrel hovering",
    "3": "sourdough starter",
    "4": "home network router",
    "5": "a question with no judgment",
}
QRELS = {"1": "d1", "2": "d2", "3": "d3", "4": "d4"}


@pytest.fixture
def collection(tmp_path: Path) -> Path:
    root = tmp_path / "tiny-beir"
    root.mkdir()
    with open(root / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for doc_id, (title, text) in DOCS.items():
            handle.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with open(root / "queries.jsonl", "w", encoding="utf-8") as handle:
        for query_id, text in QUERIES.items():
            handle.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t1" for q, d in QRELS.items()]
    (root / "qrels.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_eval_scores_each_setting_and_the_reference_as_json(collection: Path) -> None:
    data = run_json(
        "eval",
        "--beir",
        collection,
        "--qrels",
        collection / "qrels.tsv",
        "--json",
        "--set",
        "memory.search.query.hybrid.mmr.enabled=false",
        "--set",
        "memory.search.query.candidates=1,memory.search.query.hybrid.textWeight=0.5",
    )
    assert data["documents"] == len(DOCS)
    assert data["split"] == "all"
    runs = data["runs"]
    assert [run["setting"] for run in runs] == [
        "defaults",
        "memory.search.query.hybrid.mmr.enabled=false",
        "memory.search.query.candidates=1,memory.search.query.hybrid.textWeight=0.5",
    ]
    assert runs[1]["overrides"] == {"memory.search.query.hybrid.mmr.enabled": False}
    assert runs[2]["overrides"] == {
        "memory.search.query.candidates": 1,
        "memory.search.query.hybrid.textWeight": 0.5,
    }
    for run in runs:
        [keyword] = run["modes"]
        assert keyword["mode"] == "keyword"
        assert keyword["queries"] == len(QRELS)
        # Every judged document is its query's best keyword match.
        assert keyword["ndcg_at_10"] == pytest.approx(1.0)
        assert keyword["mrr_at_10"] == pytest.approx(1.0)
    assert runs[0]["modes"][0]["recall_at_100"] == pytest.approx(1.0)
    reference = data["reference"]
    assert (reference["name"], reference["k1"], reference["b"]) == ("textbook BM25", 0.9, 0.4)
    assert reference["queries"] == len(QRELS)
    assert reference["ndcg_at_10"] == pytest.approx(1.0)


@pytest.mark.parametrize(("split", "count"), [("odd", 2), ("even", 2), ("all", 4)])
def test_eval_scores_one_half_of_the_queries(collection: Path, split: str, count: int) -> None:
    qrels = collection / "qrels.tsv"
    data = run_json("eval", "--beir", collection, "--qrels", qrels, "--json", "--split", split)
    assert data["split"] == split
    assert data["runs"][0]["modes"][0]["queries"] == count
    assert data["reference"]["queries"] == count


def test_eval_prints_a_table_with_the_reference(collection: Path) -> None:
    result = run_apus(
        "eval",
        "--beir",
        collection,
        "--qrels",
        collection / "qrels.tsv",
        "--set",
        "memory.search.query.hybrid.vectorWeight=0.5",
    )
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "setting",
        "mode",
        "queries",
        "nDCG@10",
        "Recall@100",
        "MRR@10",
        "reranked",
    ]
    assert lines[1].split()[:3] == ["defaults", "keyword", "4"]
    assert lines[2].split()[:3] == ["memory.search.query.hybrid.vectorWeight=0.5", "keyword", "4"]
    assert lines[3].split()[:3] == ["reference", "textbook", "4"]
    assert lines[4].startswith("reference: textbook BM25")


def test_eval_scores_the_reranker_as_a_setting_and_keeps_its_scores(
    collection: Path, tmp_path: Path
) -> None:
    model = build(tmp_path / "reranker")
    variant = f"rerank.enabled=true,rerank.local.modelPath={str(model)!r}"
    args = ("eval", "--beir", collection, "--qrels", collection / "qrels.tsv", "--json")
    data = run_json(*args, "--set", variant)
    off, on = (run["modes"][0] for run in data["runs"])
    assert data["runs"][1]["overrides"]["memory.search.rerank.enabled"] is True
    assert (off["reranked"], on["reranked"]) == (0.0, 1.0)
    assert on["queries"] == len(QRELS)

    def kept() -> int:
        with sqlite3.connect(scores_file()) as db:
            return int(db.execute("SELECT count(*) FROM scores").fetchone()[0])

    scored = kept()
    assert scored > 0
    run_json(*args, "--set", variant)  # the same pairs again: none is scored twice
    assert kept() == scored


def test_eval_refuses_settings_that_would_change_the_shared_index(collection: Path) -> None:
    result = run_apus(
        "eval",
        "--beir",
        collection,
        "--qrels",
        collection / "qrels.tsv",
        "--set",
        "memory.search.chunking.tokens=100",
        expect=1,
    )
    assert "would change the index" in result.stderr
    assert "Fix:" in result.stderr


def test_select_queries_by_id_parity_or_position() -> None:
    queries = {"1": "a", "2": "b", "13": "c", "40": "d"}
    assert list(select_queries(queries, "odd")) == ["1", "13"]
    assert list(select_queries(queries, "even")) == ["2", "40"]
    assert select_queries(queries, "all") == queries
    named = {"q-a": "a", "q-b": "b", "q-c": "c"}  # no numbers: 1-based position in the file
    assert list(select_queries(named, "odd")) == ["q-a", "q-c"]


def test_parse_variant_reads_toml_values() -> None:
    variant = parse_variant(
        "memory.search.query.hybrid.vectorWeight=0.6, memory.search.query.hybrid.mmr.enabled=false"
    )
    assert variant.overrides == {
        "memory.search.query.hybrid.vectorWeight": 0.6,
        "memory.search.query.hybrid.mmr.enabled": False,
    }
    assert parse_variant("memory.search.query.hybrid.merge=rrf").overrides == {
        "memory.search.query.hybrid.merge": "rrf"
    }
    with pytest.raises(ConfigError):
        parse_variant("memory.search.query.hybrid.vectorWeight")


def test_parse_variant_takes_rerank_keys() -> None:
    assert parse_variant("rerank.enabled=true,rerank.candidates=40").overrides == {
        "memory.search.rerank.enabled": True,
        "memory.search.rerank.candidates": 40,
    }
    assert parse_variant("memory.search.rerank.weight=0.5").overrides == {
        "memory.search.rerank.weight": 0.5
    }


def test_parse_variant_takes_keys_relative_to_the_query_settings() -> None:
    variant = parse_variant("hybrid.merge=rrf,hybrid.rrfK=30")
    assert variant.label == "hybrid.merge=rrf,hybrid.rrfK=30"
    assert variant.overrides == {
        "memory.search.query.hybrid.merge": "rrf",
        "memory.search.query.hybrid.rrfK": 30,
    }
    with pytest.raises(ConfigError, match="would change the index"):
        parse_variant("memory.search.chunking.tokens=100")


def test_textbook_bm25_follows_the_formula() -> None:
    docs = {"a": "Heron heron canal", "b": "heron", "c": "kestrel vole", "d": "vole"}
    bm25 = TextbookBm25(docs, k1=0.9, b=0.4)
    average = 7 / 4

    def score(tf: int, length: int, df: int) -> float:
        idf = math.log(1 + (4 - df + 0.5) / (df + 0.5))
        return idf * tf * 1.9 / (tf + 0.9 * (0.6 + 0.4 * length / average))

    assert bm25.scores("heron HERON") == pytest.approx({"a": score(2, 3, 2), "b": score(1, 1, 2)})
    assert bm25.scores("vole kestrel") == pytest.approx(
        {"c": score(1, 2, 2) + score(1, 2, 1), "d": score(1, 1, 2)}
    )
    assert bm25.search("vole kestrel", 1) == ["c"]
    assert bm25.search("nothing", 10) == []
