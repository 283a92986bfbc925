"""The passage a reranker reads of a chunk: its heading line once, and where a long chunk
holds the query's words."""

from __future__ import annotations

from apus.index.store import ChunkRecord
from apus.search.rerank.passage import CHARS_PER_TOKEN, passage_text


def _chunk(text: str, title: str = "Harbour log", heading: str = "") -> ChunkRecord:
    return ChunkRecord(
        id=1,
        file_id=1,
        path="log.md",
        title=title,
        ordinal=1,
        start_line=1,
        end_line=text.count("\n") + 1,
        heading=heading,
        text=text,
        tokens=len(text.split()),
        note_date=None,
        importance=None,
    )


TURNS = "\n".join(f"turn {n}: we talked about the weather and the tides" for n in range(40))
LONG = TURNS + "\nturn 40: the lighthouse keeper retired in May\n" + TURNS


def test_a_short_chunk_is_read_whole_under_its_heading_line() -> None:
    chunk = _chunk("The keeper retired.", heading="Staff")
    assert (
        passage_text(chunk, frozenset({"keeper"}), 128)
        == "Harbour log / Staff\nThe keeper retired."
    )


def test_a_heading_the_text_opens_with_is_not_repeated() -> None:
    chunk = _chunk("# Harbour log\n\nThe keeper retired.", heading="Harbour log")
    assert passage_text(chunk, frozenset(), 128) == "# Harbour log\n\nThe keeper retired."


def test_a_long_chunk_is_read_from_the_line_that_holds_the_query_words() -> None:
    passage = passage_text(_chunk(LONG), frozenset({"lighthouse", "keeper"}), 32)
    body = passage.split("\n", 1)[1]
    assert body.startswith("turn 40: the lighthouse keeper retired")
    assert len(passage) <= 32 * CHARS_PER_TOKEN


def test_a_long_chunk_without_the_query_words_is_read_from_its_start() -> None:
    passage = passage_text(_chunk(LONG), frozenset({"absent"}), 32)
    assert passage.split("\n", 1)[1].startswith("turn 0: we talked")


def test_annotations_are_not_read() -> None:
    chunk = _chunk("The keeper retired. <!-- importance: 9 -->", title="")
    assert passage_text(chunk, frozenset(), 128) == "The keeper retired."
