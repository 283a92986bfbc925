"""Keyword segments written from term arrays (`SegmentBuilder`) are the segments Whoosh's own
writer makes from the same documents, byte for byte; a build split into several segments
ranks as one segment does; an index of the previous format is rebuilt, then updated."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from whoosh import index as whoosh_index
from whoosh.columns import NumericColumn
from whoosh.fields import COLUMN, ID, TEXT, Schema
from whoosh.filedb.filestore import FileStorage

import apus.index.keyword as keyword_module
from apus.index import keyword_schema
from apus.index.keyword import KeywordIndex
from apus.index.keyword_schema import ApusTokenizer, KeywordDocument
from apus.index.keyword_segment import SegmentBuilder
from apus.index.store import Store
from apus.vault.text import ANALYZER_VERSION, query_terms
from support.vaults import generation, make_settings, search_paths, sync, write_note

WORDS = [f"w{i:03d}" for i in range(200)]


def _vault(root: Path, notes: int = 300) -> Path:
    """Notes sharing a Zipf-like vocabulary (terms in hundreds of chunks: several blocks,
    compressed; terms in one), repeated words (frequencies above 1), several chunks with
    overlap, headings, CJK, accents, and notes with a field left empty."""
    rng = random.Random(3)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    for number in range(notes):
        words = rng.choices(WORDS, weights=weights, k=rng.randint(3, 90))
        body = " ".join(words)
        if number % 9 == 0:
            body += "\n" + "\n".join(" ".join(rng.choices(WORDS, k=14)) for _ in range(50))
        if number % 11 == 0:
            body += "\n東京の天気 café naïve Straße"
        heading = f"# {rng.choice(WORDS)} heading\n\n" if number % 3 else ""
        write_note(root, f"d{number % 7}/note-{number:03d}.md", f"{heading}{body}\n")
    write_note(root, "empty.md", "")
    return root


def _indexed_documents(tmp_path: Path) -> list[KeywordDocument]:
    settings = make_settings(_vault(tmp_path / "vault"))
    sync(settings)
    store = Store(settings.index_dir(), readonly=True)
    try:
        return list(keyword_schema.documents(store.iter_chunks()))
    finally:
        store.close()


def _segment_count(folder: Path) -> int:
    """How many segments the keyword index in `folder` holds, by Whoosh's own reader."""
    ix = whoosh_index.open_dir(str(folder))
    try:
        with ix.reader() as reader:
            return len(reader.leaf_readers())
    finally:
        ix.close()


def _segment_files(folder: Path) -> dict[str, bytes]:
    """The files of the index's one segment, named without the segment's random id, with
    the segment's document count and field lengths (kept in the table of contents)."""
    ix = whoosh_index.FileIndex(FileStorage(str(folder)))
    try:
        (segment,) = ix._segments()
        files = {
            path.name.replace(segment.segment_id(), "SEGMENT"): path.read_bytes()
            for path in folder.iterdir()
            if segment.segment_id() in path.name
        }
        files["counts"] = repr(
            (segment.doc_count_all(), sorted(segment._fieldlengths.items()))
        ).encode()
    finally:
        ix.close()
    return files


def test_segments_are_those_whooshs_writer_makes(tmp_path: Path) -> None:
    documents = _indexed_documents(tmp_path)
    assert len(documents) > 350
    stock, built = tmp_path / "stock", tmp_path / "built"
    for folder in (stock, built):
        folder.mkdir()
    ix = whoosh_index.create_in(str(stock), keyword_schema.schema())
    writer = ix.writer(compound=False)
    for document in documents:
        writer.add_document(**document.fields())
    writer.commit(merge=False)
    ix.close()
    ix = whoosh_index.create_in(str(built), keyword_schema.schema())
    builder = SegmentBuilder(ix, compound=False)
    for document in documents:
        builder.add_terms(document.terms, {"chunk": document.chunk, "note": document.note})
    builder.finish()
    ix.close()
    expected = _segment_files(stock)
    assert {"SEGMENT.pst", "SEGMENT.trm", "SEGMENT._body_len.col"} <= set(expected)
    assert _segment_files(built) == expected


def test_a_build_split_into_segments_ranks_as_one_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(_vault(tmp_path / "vault"))
    sync(settings)
    queries = [query_terms(q) for q in ("w000", "w001 w150", "w010 東京", "note heading", "cafe")]
    store = Store(settings.index_dir())
    keyword = KeywordIndex(settings.index_dir())
    try:
        keyword.rebuild(store)
        whole = [keyword.search(terms, 50, generation(settings)) for terms in queries]
        assert _segment_count(keyword.dir) == 1
        monkeypatch.setattr(keyword_module, "_SEGMENT_POSTINGS", 2000)
        keyword.rebuild(store)
        split = [keyword.search(terms, 50, generation(settings)) for terms in queries]
        assert _segment_count(keyword.dir) > 3
    finally:
        keyword.close()
        store.close()
    assert all(whole)
    for one, several in zip(whole, split, strict=True):
        assert [chunk for chunk, _ in several] == [chunk for chunk, _ in one]
        assert [score for _, score in several] == pytest.approx([s for _, s in one], rel=1e-12)


def _previous_format(folder: Path, store: Store) -> None:
    """The keyword index as format 3 made it: chunk and note ids as terms besides columns."""
    analyzer = ApusTokenizer()
    schema = Schema(
        chunk_id=ID(unique=True),
        file_id=ID(),
        chunk=COLUMN(NumericColumn("q", default=0)),
        note=COLUMN(NumericColumn("q", default=0)),
        **{
            name: TEXT(analyzer=analyzer, phrase=False)
            for name in ("path", "stem", "title", "headings", "body", "overlap")
        },
    )
    for old in folder.iterdir():
        old.unlink()
    ix = whoosh_index.create_in(str(folder), schema)
    writer = ix.writer()
    for document in keyword_schema.documents(store.iter_chunks()):
        writer.add_document(
            chunk_id=str(document.chunk), file_id=str(document.note), **document.fields()
        )
    writer.commit()
    ix.close()
    stamp = {"generation": store.generation(), "analyzer": ANALYZER_VERSION, "format": 3}
    (folder / "apus-stamp.json").write_text(json.dumps(stamp))


def test_an_index_of_the_previous_format_is_rebuilt_then_updated_in_place(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "heron.md", "# Heron\n\nThe grey heron fishes at dawn.\n")
    write_note(vault, "wren.md", "# Wren\n\nA wren sings in the hedge.\n")
    settings = make_settings(vault)
    sync(settings)
    keyword = KeywordIndex(settings.index_dir())
    store = Store(settings.index_dir(), readonly=True)
    try:
        _previous_format(keyword.dir, store)
    finally:
        store.close()
    assert keyword.state().reason == "keyword index format changed"
    report = sync(settings)
    assert report.keyword_rebuilt
    assert keyword.state().usable
    ix = whoosh_index.open_dir(str(keyword.dir))
    assert "file_id" not in ix.schema.names()
    ix.close()
    assert search_paths(settings, "heron") == ["heron.md"]
    # In place from now on: a note's chunks are found by the note column and removed.
    write_note(vault, "heron.md", "# Heron\n\nThe grey heron sleeps.\n")
    (vault / "wren.md").unlink()
    report = sync(settings)
    assert not report.keyword_rebuilt
    assert search_paths(settings, "heron") == ["heron.md"]
    assert search_paths(settings, "fishes") == []
    assert search_paths(settings, "wren") == []
