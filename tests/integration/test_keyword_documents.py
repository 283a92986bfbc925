"""The keyword index made from term lists (each chunk analysed once) holds exactly what
Whoosh's analysis of the fields' text gives: the same terms, weights (frequencies) and field
lengths."""

from __future__ import annotations

import itertools
import posixpath
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index

from apus.index.keyword import _documents, _schema, repeated_lines
from apus.index.store import ChunkRecord, Store
from support.vaults import make_settings, sync, write_note


def _text_documents(chunks: list[ChunkRecord]) -> list[dict[str, object]]:
    """Each field as text, for `ApusTokenizer` to analyse (the index as it was first made)."""
    documents: list[dict[str, object]] = []
    previous: ChunkRecord | None = None
    for chunk in chunks:
        same = previous is not None and previous.file_id == chunk.file_id
        path = posixpath.splitext(chunk.path)[0]
        documents.append(
            {
                "chunk": chunk.id,
                "note": chunk.file_id,
                "path": path,
                "stem": posixpath.basename(path),
                "title": chunk.title,
                "headings": chunk.heading,
                "body": chunk.text,
                "overlap": repeated_lines(previous, chunk) if same else "",
            }
        )
        previous = chunk
    return documents


def _weights(matcher: Any) -> list[tuple[int, float]]:
    """Each posting's document and weight (its term's frequency there)."""
    found = []
    while matcher.is_active():
        found.append((matcher.id(), matcher.weight()))
        matcher.next()
    return found


def _contents(folder: Path, documents: list[dict[str, object]]) -> dict[str, object]:
    folder.mkdir()
    ix = whoosh_index.create_in(str(folder), _schema())
    writer = ix.writer()
    for document in documents:
        writer.add_document(**document)
    writer.commit()
    with ix.searcher() as searcher:
        reader = searcher.reader()
        postings = {
            (field, term): _weights(reader.postings(field, term))
            for field, term in reader.all_terms()
        }
        lengths = {
            (docnum, field): reader.doc_field_length(docnum, field)
            for docnum in range(reader.doc_count_all())
            for field in ("path", "stem", "title", "headings", "body", "overlap")
        }
    ix.close()
    return {"postings": postings, "lengths": lengths}


def test_term_lists_index_what_the_analyzer_indexes(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    # Notes of several chunks (so chunks repeat lines of the one before), headings shared by
    # chunks, names and text in other scripts and in NFD, a line of one huge word.
    paragraph = "Running the tar archive extracts files; ＡＰＩ keys café naïve.\n"
    write_note(vault, "tools/tar-archive.md", "# Tar Archives\n\n" + paragraph * 120)
    write_note(
        vault,
        "日本/東京メモ.md",
        "# 東京の天気\n\n## 予報\n\n"
        + "今日は晴れです。明日は雨。\n" * 90
        + "## Notes\n\n"
        + "Cafe\u0301 au lait, Ωmega studies 4821 k3s.\n" * 80,
    )
    write_note(vault, "Straße/Überblick.md", "Ohne Titel\n\n" + "x" * 9000 + "\n\nend\n")
    write_note(vault, "empty-title.md", "\n\nplain words only\n")
    settings = make_settings(vault, memory__search__store__path=str(tmp_path / "index"))
    sync(settings)
    store = Store(settings.index_dir(), readonly=True)
    try:
        chunks = list(store.iter_chunks())
    finally:
        store.close()
    assert any(repeated_lines(a, b) for a, b in itertools.pairwise(chunks))
    documents = [document.fields() for document in _documents(chunks)]
    assert _contents(tmp_path / "terms", documents) == _contents(
        tmp_path / "text", _text_documents(chunks)
    )
