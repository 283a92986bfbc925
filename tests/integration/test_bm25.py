"""The numpy BM25F scorer against Whoosh's own search, on a real index with several
segments and deleted documents: same documents, same order, same scores."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import pytest
from whoosh import index as whoosh_index
from whoosh.query import Or, Term
from whoosh.scoring import BM25F

from apus.index.bm25 import Clause, LengthCache, top_scores
from apus.index.keyword import KeywordIndex, query_clauses
from apus.vault.text import query_terms

from .helpers import generation, make_settings, search_paths, sync, write_note

# A Zipf-like vocabulary: a few words in most notes, most words in a few.
WORDS = [f"w{i:03d}" for i in range(300)]
CJK = ["東京", "大阪", "天気", "会議", "資料"]
QUERIES = [
    "w000",
    "w001 w002",
    "w000 w150 w299",
    "w010 w010 w011",
    "東京 天気",
    "w005 会議",
    "w299",
]


def _note(rng: random.Random, number: int) -> str:
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    body = " ".join(rng.choices(WORDS, weights=weights, k=rng.randint(5, 120)))
    if number % 7 == 0:
        body += " " + " ".join(rng.sample(CJK, 2))
    title = " ".join(rng.choices(WORDS[:40], k=2))
    return f"---\ntitle: {title}\n---\n# {rng.choice(WORDS)}\n\n{body}\n"


@pytest.fixture(scope="module")
def keyword_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bm25")
    vault = root / "vault"
    rng = random.Random(11)
    settings = make_settings(vault, env={"APUS_MEMORY__SEARCH__STORE__PATH": str(root / "index")})
    for batch in range(3):  # three syncs: three segments
        for number in range(batch * 250, (batch + 1) * 250):
            write_note(vault, f"n{number // 100}/note-{number:04d}.md", _note(rng, number))
        sync(settings)
    for number in range(0, 750, 9):  # changed notes: their old chunks are deleted documents
        write_note(vault, f"n{number // 100}/note-{number:04d}.md", _note(rng, number + 1))
    for number in range(3, 750, 31):
        (vault / f"n{number // 100}/note-{number:04d}.md").unlink()
    sync(settings)
    return root / "index" / KeywordIndex.DIRNAME


def _whoosh(searcher, clauses: list[Clause], limit: int) -> list[tuple[int, float]]:  # type: ignore[no-untyped-def]
    query = Or([Term(c.field, c.term, boost=c.boost) for c in clauses])
    return [(hit.docnum, hit.score) for hit in searcher.search(query, limit=limit)]


def test_the_index_under_test_has_segments_and_deletions(keyword_dir: Path) -> None:
    with whoosh_index.open_dir(str(keyword_dir)).searcher() as searcher:
        leaves = searcher.leaf_searchers()
        assert len(leaves) > 1
        assert any(leaf.reader().has_deletions() for leaf, _ in leaves)


@pytest.mark.parametrize("limit", [1, 10, 200, 5000])
@pytest.mark.parametrize("text", QUERIES)
def test_scores_and_order_match_whoosh(keyword_dir: Path, text: str, limit: int) -> None:
    clauses = query_clauses(query_terms(text))
    with whoosh_index.open_dir(str(keyword_dir)).searcher(weighting=BM25F()) as searcher:
        expected = _whoosh(searcher, clauses, limit)
        got = top_scores(searcher, clauses, limit, LengthCache())
    assert expected, text
    assert [doc for doc, _ in got] == [doc for doc, _ in expected]
    for (_, mine), (_, theirs) in zip(got, expected, strict=True):
        assert mine == pytest.approx(theirs, rel=1e-9)


def test_unknown_terms_and_empty_clauses_give_nothing(keyword_dir: Path) -> None:
    with whoosh_index.open_dir(str(keyword_dir)).searcher(weighting=BM25F()) as searcher:
        assert top_scores(searcher, query_clauses(["zzz-not-a-word"]), 10, LengthCache()) == []
        assert top_scores(searcher, [], 10, LengthCache()) == []


def test_ties_are_broken_by_document_order_like_whoosh(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for number in range(30):  # identical bodies: identical scores
        write_note(vault, f"same-{number:02d}.md", "the plover and the dunlin\n")
    settings = make_settings(vault)
    sync(settings)
    clauses = [Clause("body", "plover")]
    keyword = settings.index_dir() / KeywordIndex.DIRNAME
    with whoosh_index.open_dir(str(keyword)).searcher(weighting=BM25F()) as searcher:
        assert top_scores(searcher, clauses, 7, LengthCache()) == _whoosh(searcher, clauses, 7)
    assert len(search_paths(settings, "plover", limit=50)) == 30


def test_an_index_in_another_format_is_rebuilt_on_the_next_search(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "heron.md", "# Heron\n\nThe grey heron fishes at dawn.\n")
    settings = make_settings(vault)
    sync(settings)
    keyword = KeywordIndex(settings.index_dir())
    stamp = keyword.dir / "apus-stamp.json"
    fields = json.loads(stamp.read_text())
    assert fields["format"] == 1
    stamp.write_text(json.dumps({**fields, "format": 0}))
    assert keyword.state().reason == "keyword index format changed"
    assert search_paths(settings, "heron") == ["heron.md"]
    assert keyword.state().usable


def test_cached_lengths_stay_right_across_incremental_updates(tmp_path: Path) -> None:
    # One KeywordIndex keeps its per-segment length cache from search to search while
    # syncs add segments and delete documents; its answers must stay Whoosh's.
    vault = tmp_path / "vault"
    rng = random.Random(5)
    settings = make_settings(vault)
    keyword = KeywordIndex(settings.index_dir())
    terms = query_terms("w000 w003 東京")
    for round_number in range(3):
        for number in range(round_number * 40, round_number * 40 + 60):  # adds and rewrites
            write_note(vault, f"note-{number:03d}.md", _note(rng, number))
        report = sync(settings)
        store_generation = generation(settings)
        got = keyword.search(terms, 50, store_generation)
        with whoosh_index.open_dir(str(keyword.dir)).searcher(weighting=BM25F()) as searcher:
            expected = [
                (int(searcher.stored_fields(doc)["chunk_id"]), score)
                for doc, score in _whoosh(searcher, query_clauses(terms), 50)
            ]
        assert report.changed or round_number == 0
        assert [chunk for chunk, _ in got] == [chunk for chunk, _ in expected]
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-9)
    keyword.close()


@pytest.mark.parametrize("setup", ["empty vault", "every note skipped", "first sync cancelled"])
def test_an_index_without_chunks_answers_no_match(tmp_path: Path, setup: str) -> None:
    # An empty Whoosh index has a reader without a segment; scoring must not trip on it.
    vault = tmp_path / "vault"
    vault.mkdir()
    cancel = threading.Event()
    if setup == "every note skipped":
        (vault / "binary.md").write_bytes(b"\x00\x01\x02" * 100)
    elif setup == "first sync cancelled":  # stopped before its first batch was committed
        write_note(vault, "heron.md", "# Heron\n\nThe grey heron fishes at dawn.\n")
        cancel.set()
    settings = make_settings(vault)
    report = sync(settings, cancel=cancel)
    assert report.cancelled == cancel.is_set()
    assert search_paths(settings, "heron") == []
    keyword = KeywordIndex(settings.index_dir())
    try:
        assert keyword.search(["heron"], 10, generation(settings)) == []
    finally:
        keyword.close()
