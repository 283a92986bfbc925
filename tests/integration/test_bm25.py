"""The numpy BM25F scorer on real Whoosh indexes: against a plain-Python reference computed
from the store, on an index with several segments and deleted documents; an index updated
in place against a clean rebuild; an empty index; a note split into chunks."""

from __future__ import annotations

import json
import math
import random
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from whoosh import index as whoosh_index
from whoosh.reading import SegmentReader
from whoosh.util.numeric import byte_to_length, length_to_byte

from apus.config import Settings
from apus.index.bm25 import (
    PostingsCache,
    SegmentCache,
    collect_statistics,
    segment_id,
    top_scores,
)
from apus.index.keyword import KeywordIndex, search_terms
from apus.index.keyword_schema import KEYWORD_FORMAT, PARAMS, repeated_lines
from apus.index.store import ChunkRecord, Store
from apus.vault.text import keyword_term, query_terms, tokenize
from support.vaults import generation, make_settings, search, search_paths, sync, write_note

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
    "note",  # every path
]


def _note(rng: random.Random, number: int) -> str:
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    body = " ".join(rng.choices(WORDS, weights=weights, k=rng.randint(5, 120)))
    if number % 7 == 0:
        body += " " + " ".join(rng.sample(CJK, 2))
    if number % 5 == 0:  # long enough for several chunks, with overlap between them
        lines = [" ".join(rng.choices(WORDS, weights=weights, k=12)) for _ in range(60)]
        body += "\n" + "\n".join(lines)
    title = " ".join(rng.choices(WORDS[:40], k=2))
    return f"---\ntitle: {title}\n---\n# {rng.choice(WORDS)}\n\n{body}\n"


def _churn(vault: Path, settings: Settings, rng: random.Random) -> None:
    """Three syncs of new notes (three segments), then edits, deletions and renames."""
    for batch in range(3):
        for number in range(batch * 250, (batch + 1) * 250):
            write_note(vault, f"n{number // 100}/note-{number:04d}.md", _note(rng, number))
        sync(settings)
    for number in range(0, 750, 9):  # changed notes: their old chunks are deleted documents
        write_note(vault, f"n{number // 100}/note-{number:04d}.md", _note(rng, number + 1))
    for number in range(3, 750, 31):
        (vault / f"n{number // 100}/note-{number:04d}.md").unlink()
    for number in range(4, 750, 37):
        source = vault / f"n{number // 100}/note-{number:04d}.md"
        if source.exists():
            source.rename(vault / f"moved/note-{number:04d}.md")
    sync(settings)


@pytest.fixture(scope="module")
def churned(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("bm25")
    vault = root / "vault"
    (vault / "moved").mkdir(parents=True)
    settings = make_settings(vault, env={"APUS_MEMORY__SEARCH__STORE__PATH": str(root / "index")})
    _churn(vault, settings, random.Random(11))
    return settings


def _keyword_dir(settings: Settings) -> Path:
    return settings.index_dir() / KeywordIndex.DIRNAME


# -- a plain-Python BM25F from the store's chunks: the specification the scorer must meet ------


def _encoded(length: int) -> float:
    """A field length as Whoosh stores it (one byte)."""
    return float(byte_to_length(length_to_byte(length)))


def _fields(chunk: ChunkRecord, previous: ChunkRecord | None) -> dict[str, Counter[str]]:
    path = chunk.path.rsplit(".", 1)[0]
    texts = {
        "path": path,
        "stem": path.rsplit("/", 1)[-1],
        "title": chunk.title,
        "headings": chunk.heading,
        "body": chunk.text,
        "overlap": repeated_lines(previous, chunk),
    }
    return {f: Counter(keyword_term(t.term) for t in tokenize(text)) for f, text in texts.items()}


def _reference(store: Store, terms: list[str]) -> dict[int, float]:
    chunks: list[tuple[ChunkRecord, dict[str, Counter[str]]]] = []
    previous: ChunkRecord | None = None
    for chunk in store.iter_chunks():
        same = previous is not None and previous.file_id == chunk.file_id
        chunks.append((chunk, _fields(chunk, previous if same else None)))
        previous = chunk
    repeated = PARAMS.repeated_in or {}
    # Chunk level: each chunk's own frequencies and (encoded) lengths.
    chunk_tf = {c.id: f for c, f in chunks}
    chunk_len = {c.id: {field: _encoded(sum(f[field].values())) for field in f} for c, f in chunks}
    # Note level: repeated lines subtracted from the body, other fields at their most.
    note_tf: dict[int, dict[str, Counter[str]]] = {}
    note_len: dict[int, dict[str, float]] = {}
    for chunk, fields in chunks:
        tf = note_tf.setdefault(chunk.file_id, {field: Counter() for field in PARAMS.weights})
        lengths = note_len.setdefault(chunk.file_id, dict.fromkeys(PARAMS.weights, 0.0))
        for field in PARAMS.weights:
            if field in repeated:
                tf[field].update(fields[field])
                tf[field].subtract(fields[repeated[field]])
                lengths[field] += chunk_len[chunk.id][field] - chunk_len[chunk.id][repeated[field]]
            else:
                for term, count in fields[field].items():
                    tf[field][term] = max(tf[field][term], count)
                lengths[field] = max(lengths[field], chunk_len[chunk.id][field])
    chunk_scores = _level_scores(terms, chunk_tf, chunk_len)
    note_scores = _level_scores(terms, note_tf, note_len)
    best: dict[int, float] = {}
    for chunk, _ in chunks:
        if chunk_scores[chunk.id] > 0:
            best[chunk.file_id] = max(best.get(chunk.file_id, 0.0), chunk_scores[chunk.id])
    return {
        chunk.id: max(
            chunk_scores[chunk.id],
            note_scores[chunk.file_id] * chunk_scores[chunk.id] / best[chunk.file_id],
        )
        for chunk, _ in chunks
        if chunk_scores[chunk.id] > 0
    }


def _level_scores(
    terms: list[str],
    tf: dict[int, dict[str, Counter[str]]],
    lengths: dict[int, dict[str, float]],
) -> dict[int, float]:
    count = len(tf)
    average = {f: sum(lengths[u][f] for u in tf) / count for f in PARAMS.weights}
    scores = dict.fromkeys(tf, 0.0)
    for term in terms:
        for group in PARAMS.groups:
            weighted = {}
            for unit in tf:
                total = 0.0
                for field, weight in group.items():
                    norm = 1 - PARAMS.b + PARAMS.b * lengths[unit][field] / (average[field] or 1)
                    total += weight * tf[unit][field][term] / norm
                if total > 0:
                    weighted[unit] = total
            idf = math.log(1 + (count - len(weighted) + 0.5) / (len(weighted) + 0.5))
            for unit, total in weighted.items():
                scores[unit] += idf * total * (PARAMS.k1 + 1) / (total + PARAMS.k1)
    return scores


# -- tests ---------------------------------------------------------------------------------------


def test_the_index_under_test_has_segments_deletions_and_overlap(churned: Settings) -> None:
    with whoosh_index.open_dir(str(_keyword_dir(churned))).searcher() as searcher:
        leaves = searcher.leaf_searchers()
        assert len(leaves) > 1
        assert any(leaf.reader().has_deletions() for leaf, _ in leaves)
        assert any(True for _ in searcher.reader().lexicon("overlap"))


@pytest.mark.parametrize("text", QUERIES)
def test_scores_match_the_reference_bm25f(churned: Settings, text: str) -> None:
    terms = search_terms(query_terms(text))
    store = Store(churned.index_dir(), readonly=True)
    try:
        expected = _reference(store, terms)
    finally:
        store.close()
    keyword = KeywordIndex(churned.index_dir())
    try:
        # A generation's first search reads the segment files, the next ones map them.
        first = dict(keyword.search(query_terms(text), 100_000, generation(churned)))
        assert not keyword._ix.storage.supports_mmap  # type: ignore[union-attr]
        # The second search's postings come from the first's, decoded once.
        assert len(keyword._segments.postings) > 0
        got = dict(keyword.search(query_terms(text), 100_000, generation(churned)))
        assert keyword._ix.storage.supports_mmap  # type: ignore[union-attr]
    finally:
        keyword.close()
    assert first == got
    assert expected, text
    assert got.keys() == expected.keys()
    for chunk_id, score in expected.items():
        assert got[chunk_id] == pytest.approx(score, rel=1e-9), chunk_id


@pytest.mark.parametrize("limit", [1, 10, 200])
def test_the_limit_keeps_the_best_in_order(churned: Settings, limit: int) -> None:
    keyword = KeywordIndex(churned.index_dir())
    try:
        everything = keyword.search(query_terms("w000 w150"), 100_000, generation(churned))
        top = keyword.search(query_terms("w000 w150"), limit, generation(churned))
    finally:
        keyword.close()
    assert top == everything[:limit]
    scores = [score for _, score in everything]
    assert scores == sorted(scores, reverse=True)


def test_an_index_updated_in_place_scores_like_a_clean_rebuild(
    tmp_path: Path, churned: Settings
) -> None:
    # Whoosh counts deleted documents in N, df and field lengths until segments merge; the
    # scorer must not, or an index that saw edits ranks differently from `index --force`.
    terms = [query_terms(text) for text in QUERIES]
    keyword = KeywordIndex(churned.index_dir())
    try:
        incremental = [dict(keyword.search(t, 100_000, generation(churned))) for t in terms]
    finally:
        keyword.close()
    clean_dir = tmp_path / "clean"
    clean_dir.mkdir()
    store = Store(churned.index_dir(), readonly=True)
    clean = KeywordIndex(clean_dir)
    try:
        clean.rebuild(store)
        rebuilt = [dict(clean.search(t, 100_000, store.generation())) for t in terms]
    finally:
        clean.close()
        store.close()
    with whoosh_index.open_dir(str(clean.dir)).searcher() as searcher:
        assert not any(leaf.reader().has_deletions() for leaf, _ in searcher.leaf_searchers())
    for text, before, after in zip(QUERIES, incremental, rebuilt, strict=True):
        assert before.keys() == after.keys(), text
        for chunk_id, score in after.items():
            assert before[chunk_id] == pytest.approx(score, rel=1e-12), (text, chunk_id)


def test_ties_are_broken_by_document_order(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for number in range(30):  # identical bodies: identical scores
        write_note(vault, f"same-{number:02d}.md", "the plover and the dunlin\n")
    settings = make_settings(vault)
    sync(settings)
    keyword = KeywordIndex(settings.index_dir())
    try:
        hits = keyword.search(["plover"], 7, generation(settings))
    finally:
        keyword.close()
    assert len({score for _, score in hits}) == 1
    assert [chunk for chunk, _ in hits] == sorted(chunk for chunk, _ in hits)
    assert len(search_paths(settings, "plover", limit=50)) == 30


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


def test_a_note_split_into_chunks_never_ranks_below_itself_unsplit(tmp_path: Path) -> None:
    # Each word of the query sits in its own paragraph of one note; other notes of about one
    # paragraph hold one word each. Whole, the note is the only one with all three; cut into
    # one chunk per paragraph, no chunk of it holds more than one, and scored chunk by chunk
    # it would fall behind the others.
    words = ("quokka", "numbat", "bilby")

    def passage(word: str, day: int) -> str:
        return (
            f"Seen near the canal on day {day}: one {word}, quiet in the reeds while the "
            "weather turned and the wind picked up over the water meadows by the old mill."
        )

    notes = {"target.md": "# Log\n\n" + "\n\n".join(passage(w, 0) for w in words) + "\n"}
    for word in words:
        for day in range(1, 4):
            notes[f"other-{word[0]}{day}.md"] = f"# Other\n\n{passage(word, day)}\n"
    found = {}
    for tokens in (400, 40):
        vault = tmp_path / f"vault-{tokens}"
        for rel, text in notes.items():
            write_note(vault, rel, text)
        settings = make_settings(vault, memory__search__chunking__tokens=tokens)
        sync(settings)
        hits = search(settings, " ".join(words), limit=20, mmr=False)
        found[tokens] = (hits[0].path, len({h.chunk_id for h in hits if h.path == "target.md"}))
    assert found[400] == ("target.md", 1)
    assert found[40] == ("target.md", 3)


def test_an_index_in_another_format_is_rebuilt_on_the_next_search(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "heron.md", "# Heron\n\nThe grey heron fishes at dawn.\n")
    settings = make_settings(vault)
    sync(settings)
    keyword = KeywordIndex(settings.index_dir())
    stamp = keyword.dir / "apus-stamp.json"
    fields = json.loads(stamp.read_text())
    assert fields["format"] == KEYWORD_FORMAT
    stamp.write_text(json.dumps({**fields, "format": KEYWORD_FORMAT - 1}))
    assert keyword.state().reason == "keyword index format changed"
    assert search_paths(settings, "heron") == ["heron.md"]
    assert keyword.state().usable


def test_cached_segment_data_stays_right_across_incremental_updates(tmp_path: Path) -> None:
    # One KeywordIndex keeps its per-segment cache from search to search while syncs add
    # segments and delete documents; its answers must stay those of a freshly opened one.
    vault = tmp_path / "vault"
    vault.mkdir()  # the index location is asked for before the first note is written
    rng = random.Random(5)
    settings = make_settings(vault)
    kept = KeywordIndex(settings.index_dir())
    terms = query_terms("w000 w003 東京")
    try:
        for round_number in range(3):
            for number in range(round_number * 40, round_number * 40 + 60):  # adds, rewrites
                write_note(vault, f"note-{number:03d}.md", _note(rng, number))
            report = sync(settings)
            assert report.changed or round_number == 0
            got = kept.search(terms, 50, generation(settings))
            fresh = KeywordIndex(settings.index_dir())
            try:
                expected = fresh.search(terms, 50, generation(settings))
            finally:
                fresh.close()
            assert [chunk for chunk, _ in got] == [chunk for chunk, _ in expected]
            assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-12)
    finally:
        kept.close()


def test_statistics_count_live_documents_only(churned: Settings) -> None:
    store = Store(churned.index_dir(), readonly=True)
    try:
        files, chunks = store.counts()
    finally:
        store.close()
    with whoosh_index.open_dir(str(_keyword_dir(churned))).reader() as reader:
        stats = collect_statistics(reader, PARAMS, SegmentCache())
        assert reader.doc_count_all() > chunks  # deleted documents are still there
        assert (stats.chunks.count, stats.notes.count) == (chunks, files)
        assert top_scores(reader, ["zzz-not-a-word"], 10, stats, PARAMS) == []
        assert top_scores(reader, [], 10, stats, PARAMS) == []


def test_decoded_postings_are_kept_within_their_budget_and_never_changed() -> None:
    entry = 256 + 2 * 8 * 100  # the cost of one list of 100 postings
    cache = PostingsCache(budget_bytes=2 * entry + 300)  # two lists and an absent term
    lists = {word: (np.arange(100, dtype=np.int64), np.ones(100)) for word in "abc"}
    cache.put(("s1", "body", "a"), lists["a"])
    cache.put(("s1", "body", "b"), lists["b"])
    cache.put(("s2", "body", "z"), None)  # the segment lacks it: known, not looked up again
    assert cache.get(("s1", "body", "a"))[0]  # used: the oldest is now "b"
    cache.put(("s1", "body", "c"), lists["c"])
    assert not cache.get(("s1", "body", "b"))[0]
    assert cache.get(("s2", "body", "z")) == (True, None)
    held, postings = cache.get(("s1", "body", "a"))
    assert held and postings is not None and not postings[0].flags.writeable
    cache.keep_only({"s2"})  # s1 merged away
    assert len(cache) == 1 and cache.get(("s2", "body", "z")) == (True, None)


def test_postings_are_decoded_once_per_segment_and_term(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session's postings cache, seen through the decoder it saves calls to: a repeated
    # search decodes nothing, and after an update only segments not seen before are decoded.
    vault = tmp_path / "vault"
    settings = make_settings(vault, env={"APUS_MEMORY__SEARCH__STORE__PATH": str(tmp_path / "ix")})
    rng = random.Random(5)
    for number in range(600):  # a first index of two segments (it mirrors its first batch)
        write_note(vault, f"n/note-{number:04d}.md", _note(rng, number))
    sync(settings)
    decoded: list[str] = []
    decode = SegmentReader.postings

    def counting(leaf: SegmentReader, field: str, term: str, *args: Any, **kwargs: Any) -> Any:
        decoded.append(segment_id(leaf))
        return decode(leaf, field, term, *args, **kwargs)

    monkeypatch.setattr(SegmentReader, "postings", counting)
    keyword = KeywordIndex(settings.index_dir())
    try:
        first = keyword.search(query_terms("w000 w150"), 100, generation(settings))
        seen = set(decoded)
        assert len(seen) == 2
        decoded.clear()
        assert keyword.search(query_terms("w000 w150"), 100, generation(settings)) == first
        assert decoded == []

        write_note(vault, "n/new.md", "# w150\n\nw150 w000 and w150 again\n")
        sync(settings)
        with whoosh_index.open_dir(str(_keyword_dir(settings))).reader() as reader:
            now = {segment_id(leaf) for leaf, _ in reader.leaf_readers()}
        after = keyword.search(query_terms("w000 w150"), 100, generation(settings))
    finally:
        keyword.close()
    assert seen & now, "the update kept no earlier segment: nothing to reuse"
    assert decoded and not set(decoded) & seen
    store = Store(settings.index_dir(), readonly=True)
    try:
        record = store.file_by_path("n/new.md")
        assert record is not None
        new_chunks = {chunk.id for chunk in store.iter_chunks([record.id])}
    finally:
        store.close()
    assert new_chunks & {chunk_id for chunk_id, _ in after}
