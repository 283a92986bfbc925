"""The keyword index made from term lists (each chunk analysed once) holds exactly what
Whoosh's analysis of the fields' text gives: the same terms, weights (frequencies) and field
lengths; and an index whose pickled schema names the module its classes were first defined in
still opens."""

from __future__ import annotations

import io
import itertools
import pickle
import posixpath
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh.util.varints import varint

from apus.index.keyword import KeywordIndex
from apus.index.keyword_schema import (
    ApusTokenizer,
    TermCounts,
    documents,
    repeated_lines,
    schema,
)
from apus.index.store import ChunkRecord, Store
from support.vaults import make_settings, sync, write_note


def _text_documents(chunks: list[ChunkRecord]) -> list[dict[str, object]]:
    """Each field as text, for `ApusTokenizer` to analyse (the index as it was first made)."""
    texts: list[dict[str, object]] = []
    previous: ChunkRecord | None = None
    for chunk in chunks:
        same = previous is not None and previous.file_id == chunk.file_id
        path = posixpath.splitext(chunk.path)[0]
        texts.append(
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
    return texts


def _weights(matcher: Any) -> list[tuple[int, float]]:
    """Each posting's document and weight (its term's frequency there)."""
    found = []
    while matcher.is_active():
        found.append((matcher.id(), matcher.weight()))
        matcher.next()
    return found


def _contents(folder: Path, fields: list[dict[str, object]]) -> dict[str, object]:
    folder.mkdir()
    ix = whoosh_index.create_in(str(folder), schema())
    writer = ix.writer()
    for document in fields:
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
    term_lists = [document.fields() for document in documents(chunks)]
    assert _contents(tmp_path / "terms", term_lists) == _contents(
        tmp_path / "text", _text_documents(chunks)
    )


def test_an_index_that_names_the_schema_classes_in_the_keyword_module_still_opens(
    tmp_path: Path,
) -> None:
    """Whoosh pickles the schema into the index (protocol 2: each class named by its module
    and name); indexes made before the schema had a module of its own name the analyzer and
    the format in `apus.index.keyword`."""
    new = pickle.dumps(schema(), 2)
    assert b"capus.index.keyword_schema\nApusTokenizer\n" in new
    old = new.replace(b"capus.index.keyword_schema\n", b"capus.index.keyword\n")
    assert b"capus.index.keyword\nTermCounts\n" in old
    loaded = pickle.loads(old)
    assert loaded.names() == schema().names()
    assert type(loaded["body"].format) is TermCounts
    assert type(loaded["body"].analyzer) is ApusTokenizer

    vault = tmp_path / "vault"
    write_note(vault, "tar.md", "# Tar\n\nExtract an archive with tar.\n")
    settings = make_settings(vault, memory__search__store__path=str(tmp_path / "index"))
    sync(settings)
    folder = settings.index_dir() / KeywordIndex.DIRNAME
    [toc] = folder.glob("*.toc")
    toc.write_bytes(_renamed_in_toc(toc.read_bytes()))
    assert b"capus.index.keyword\nApusTokenizer\n" in toc.read_bytes()
    state = KeywordIndex(settings.index_dir()).state()
    assert state.usable, state.reason


def _renamed_in_toc(toc: bytes) -> bytes:
    """The table of contents with its pickled schema naming `apus.index.keyword`: Whoosh
    writes the pickle as a string after its length (a varint), so the length changes too."""
    start = toc.index(b"\x80\x02")  # a protocol 2 pickle begins so
    stream = io.BytesIO(toc[start:])
    pickle.Unpickler(stream).load()
    end = start + stream.tell()
    size = varint(end - start)
    assert toc[start - len(size) : start] == size
    renamed = toc[start:end].replace(b"capus.index.keyword_schema\n", b"capus.index.keyword\n")
    return toc[: start - len(size)] + varint(len(renamed)) + renamed + toc[end:]
