"""Chunking: budgets, overlap, headings, fences, line ranges, huge lines, CJK, determinism."""

from __future__ import annotations

import tracemalloc
from itertools import pairwise
from pathlib import Path

import pytest

from apus.vault.chunk import Chunk, chunk_note, iter_chunks
from apus.vault.markdown import parse_note
from apus.vault.text import count_tokens

# "lorem" x 15 costs 19.5 -> 20 tokens; x 23 costs 29.9 -> 30 tokens.
PARA_20 = " ".join(["lorem"] * 15)
PARA_30 = " ".join(["lorem"] * 23)


def chunk_file(
    tmp_path: Path, content: str, *, newline: str = "\n", **options: int
) -> tuple[list[str], list[Chunk]]:
    """Write a real note, read it back, chunk it; returns the file's lines and the chunks."""
    path = tmp_path / "note.md"
    path.write_bytes(content.replace("\n", newline).encode("utf-8"))
    text = path.read_bytes().decode("utf-8")
    chunks = chunk_note(parse_note(text, fallback_title=path.stem), **options)
    return text.split(newline), chunks


def assert_chunks_are_file_lines(file_lines: list[str], chunks: list[Chunk]) -> None:
    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(file_lines)
        assert chunk.text == "\n".join(file_lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.tokens == count_tokens(chunk.text)


def test_whitespace_only_bodies_give_no_chunks(tmp_path: Path) -> None:
    assert chunk_file(tmp_path, "")[1] == []
    assert chunk_file(tmp_path, "  \n\n\t\n")[1] == []
    assert chunk_file(tmp_path, "---\ntitle: only metadata\n---\n\n")[1] == []


def test_small_note_is_one_chunk_with_file_line_numbers(tmp_path: Path) -> None:
    content = "---\ntitle: T\n---\n\n# Apus\n\nSearch notes.\n\n"
    file_lines, chunks = chunk_file(tmp_path, content)
    assert len(chunks) == 1
    assert chunks[0].start_line == 5  # blank body lines before the heading are not included
    assert chunks[0].end_line == 7
    assert chunks[0].text == "# Apus\n\nSearch notes."
    assert chunks[0].heading_path == ("Apus",)
    assert_chunks_are_file_lines(file_lines, chunks)


def test_overlap_repeats_whole_trailing_lines(tmp_path: Path) -> None:
    # Each line costs 9 tokens (6 words = 7.8, plus ':' = 8.8): 11 lines fill 99 of 100,
    # and 3 lines (27) is the most overlap that stays within 30.
    lines = [f"Line {i}: alpha beta gamma delta" for i in range(1, 41)]
    file_lines, chunks = chunk_file(tmp_path, "\n".join(lines) + "\n", max_tokens=100, overlap=30)
    assert_chunks_are_file_lines(file_lines, chunks)
    assert [(c.start_line, c.end_line) for c in chunks[:3]] == [(1, 11), (9, 19), (17, 27)]
    for previous, current in pairwise(chunks):
        assert previous.start_line < current.start_line <= previous.end_line
        shared = "\n".join(file_lines[current.start_line - 1 : previous.end_line])
        assert count_tokens(shared) <= 30
    assert chunks[-1].end_line == 40
    assert all(chunk.tokens <= 100 for chunk in chunks)


def test_zero_overlap_gives_disjoint_chunks(tmp_path: Path) -> None:
    lines = [f"Line {i}: alpha beta gamma delta" for i in range(1, 41)]
    _, chunks = chunk_file(tmp_path, "\n".join(lines), max_tokens=100, overlap=0)
    for previous, current in pairwise(chunks):
        assert current.start_line == previous.end_line + 1


def test_budget_respected_and_every_line_covered(tmp_path: Path) -> None:
    parts = ["# Handbook", ""]
    for section in range(1, 6):
        parts += [f"## Part {section}", ""]
        for paragraph in range(section + 1):
            words = " ".join(f"word{section}{paragraph}{n}" for n in range(7 * paragraph + 3))
            parts += [words, f"- item {paragraph}, with punctuation!", ""]
        parts += ["```python", *[f"value_{n} = compute({n})" for n in range(section * 4)], "```"]
        parts += [""]
    content = "\n".join(parts)
    file_lines, chunks = chunk_file(tmp_path, content, max_tokens=120, overlap=30)
    assert_chunks_are_file_lines(file_lines, chunks)
    assert len(chunks) > 3
    assert all(chunk.tokens <= 120 for chunk in chunks)
    covered = {n for chunk in chunks for n in range(chunk.start_line, chunk.end_line + 1)}
    for number, line in enumerate(file_lines, start=1):
        if line.strip():
            assert number in covered, line
    starts = [chunk.start_line for chunk in chunks]
    assert starts == sorted(set(starts))


def test_chunks_prefer_to_end_before_a_heading(tmp_path: Path) -> None:
    # Per section: heading (4) + three paragraphs (20 each) = 64. Filling greedily would
    # pull the next section's heading and first paragraph into each chunk (64+4+20 <= 100).
    parts = ["# Doc", ""]
    for section in range(1, 5):
        parts += [f"## Section {section}", "", PARA_20, "", PARA_20, "", PARA_20, ""]
    file_lines, chunks = chunk_file(tmp_path, "\n".join(parts), max_tokens=100, overlap=30)
    assert_chunks_are_file_lines(file_lines, chunks)
    assert len(chunks) == 4
    assert chunks[0].text.startswith("# Doc\n\n## Section 1\n")
    assert chunks[0].heading_path == ("Doc", "Section 1")
    for index, chunk in enumerate(chunks[1:], start=2):
        assert chunk.text.startswith(f"## Section {index}\n")
        assert chunk.heading_path == ("Doc", f"Section {index}")
    for chunk in chunks:
        assert chunk.text.count("## Section") == 1
        assert chunk.text.endswith(PARA_20)


def test_a_chunk_does_not_end_with_a_dangling_heading(tmp_path: Path) -> None:
    # Two 30-token paragraphs per section: the next heading still fits (3+4+60+4 <= 100)
    # but its section does not, so the heading goes with its section.
    parts = ["# Doc", ""]
    for section in range(1, 4):
        parts += [f"## Section {section}", "", PARA_30, "", PARA_30, ""]
    file_lines, chunks = chunk_file(tmp_path, "\n".join(parts), max_tokens=100, overlap=30)
    assert_chunks_are_file_lines(file_lines, chunks)
    for chunk in chunks:
        assert not chunk.text.splitlines()[-1].startswith("#")
    assert [chunk.text.splitlines()[0] for chunk in chunks] == [
        "# Doc",
        "## Section 2",
        "## Section 3",
    ]


def test_fence_that_fits_is_kept_whole(tmp_path: Path) -> None:
    prose = [f"Prose line {i} says something useful." for i in range(6)]  # 10 tokens each
    fence = ["```python", *[f"x{i} = call({i})" for i in range(8)], "```"]
    content = "\n".join([*prose, "", *fence, "", "After the code."])
    file_lines, chunks = chunk_file(tmp_path, content, max_tokens=100, overlap=20)
    assert_chunks_are_file_lines(file_lines, chunks)
    fence_text = "\n".join(fence)
    assert count_tokens(fence_text) <= 100
    holding = [chunk for chunk in chunks if "```python" in chunk.text]
    assert len(holding) == 1
    assert fence_text in holding[0].text
    for chunk in chunks:
        touched = [line for line in fence if line in chunk.text.split("\n")]
        assert touched in ([], fence)


def test_fence_larger_than_the_budget_is_split_at_lines(tmp_path: Path) -> None:
    fence = ["~~~", *[f"row_{i} = [{i}, {i + 1}, {i + 2}]" for i in range(60)], "~~~"]
    content = "\n".join(["# Code", "", *fence, ""])
    file_lines, chunks = chunk_file(tmp_path, content, max_tokens=80, overlap=10)
    assert_chunks_are_file_lines(file_lines, chunks)
    assert count_tokens("\n".join(fence)) > 80
    assert len(chunks) > 3
    assert all(chunk.tokens <= 80 for chunk in chunks)
    covered = {n for chunk in chunks for n in range(chunk.start_line, chunk.end_line + 1)}
    assert covered == set(range(1, len(fence) + 3))
    assert all(chunk.heading_path == ("Code",) for chunk in chunks)


def test_hash_lines_inside_fences_are_not_headings(tmp_path: Path) -> None:
    content = "# Real\n\n```sh\n# comment, not a heading\n```\n\ntext\n"
    _, chunks = chunk_file(tmp_path, content)
    assert len(chunks) == 1
    assert chunks[0].heading_path == ("Real",)


def test_heading_paths_follow_nesting(tmp_path: Path) -> None:
    content = "\n".join(
        [
            "# Apus",
            PARA_30,
            "## Design",
            PARA_30,
            "### Detail",
            PARA_30,
            "## Other",
            PARA_30,
            "# Second",
            PARA_30,
        ]
    )
    file_lines, chunks = chunk_file(tmp_path, content, max_tokens=40, overlap=0)
    assert_chunks_are_file_lines(file_lines, chunks)
    assert [chunk.heading_path for chunk in chunks] == [
        ("Apus",),
        ("Apus", "Design"),
        ("Apus", "Design", "Detail"),
        ("Apus", "Other"),
        ("Second",),
    ]


def test_chunk_starting_inside_a_section_carries_its_path(tmp_path: Path) -> None:
    lines = [f"Line {i}: alpha beta gamma delta" for i in range(30)]
    content = "\n".join(["# Apus", "## Design", *lines])
    file_lines, chunks = chunk_file(tmp_path, content, max_tokens=60, overlap=10)
    assert_chunks_are_file_lines(file_lines, chunks)
    assert len(chunks) > 2
    assert all(chunk.heading_path == ("Apus", "Design") for chunk in chunks)


def test_huge_single_line_is_split_within_the_line(tmp_path: Path) -> None:
    huge = " ".join(f"w{i % 97}" for i in range(3000))  # 3000 words, about 3900 tokens
    content = f"# Title\n\n{huge}\nlast line\n"
    _, chunks = chunk_file(tmp_path, content, max_tokens=400, overlap=80)
    inside = [chunk for chunk in chunks if chunk.start_line == chunk.end_line == 3]
    assert len(inside) >= 10
    assert "".join(chunk.text for chunk in inside) == huge
    assert all(chunk.tokens <= 400 for chunk in chunks)
    assert all(chunk.heading_path == ("Title",) for chunk in chunks)
    # Slices are cut after spaces where possible, so words stay whole.
    assert all(chunk.text.endswith(" ") for chunk in inside[:-1])
    assert chunks[0].text == "# Title"
    assert chunks[-1].text == "last line"


def test_huge_cjk_line_without_newlines(tmp_path: Path) -> None:
    line = "東京都の会議室で新しい検索機能を設計した" * 100  # 2000 characters, no break
    _, chunks = chunk_file(tmp_path, line, max_tokens=400, overlap=80)
    assert [len(chunk.text) for chunk in chunks] == [400] * 5
    assert [chunk.tokens for chunk in chunks] == [400] * 5
    assert "".join(chunk.text for chunk in chunks) == line
    assert all(chunk.start_line == chunk.end_line == 1 for chunk in chunks)


def test_minified_line_is_split_within_budget(tmp_path: Path) -> None:
    line = "".join(f"function f{i}(a,b){{return a*{i}+b;}}" for i in range(2000))
    _, chunks = chunk_file(tmp_path, line, max_tokens=200, overlap=40)
    assert len(chunks) > 10
    assert "".join(chunk.text for chunk in chunks) == line
    assert all(chunk.tokens <= 200 for chunk in chunks)


def test_cjk_text_counts_one_token_per_character(tmp_path: Path) -> None:
    lines = ["日本語の文章を検索する", "한국어문장입니다", "我们在北京开会"] * 20
    file_lines, chunks = chunk_file(tmp_path, "\n".join(lines), max_tokens=50, overlap=10)
    assert_chunks_are_file_lines(file_lines, chunks)
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.tokens == len(chunk.text.replace("\n", "")) <= 50


def test_crlf_file_with_frontmatter_keeps_file_line_numbers(tmp_path: Path) -> None:
    content = "---\ntitle: x\nimportance: 3\n---\n# Head\nalpha\n\nbeta\n"
    file_lines, chunks = chunk_file(tmp_path, content, newline="\r\n")
    assert len(chunks) == 1
    assert (chunks[0].start_line, chunks[0].end_line) == (5, 8)
    assert_chunks_are_file_lines(file_lines, chunks)


def test_chunking_is_deterministic(tmp_path: Path) -> None:
    parts = ["# Doc"]
    for section in range(8):
        parts += [f"## S{section}", PARA_30, "", PARA_20, "```", "code()", "```"]
    content = "\n".join(parts)
    _, first = chunk_file(tmp_path, content, max_tokens=90, overlap=25)
    _, second = chunk_file(tmp_path, content, max_tokens=90, overlap=25)
    assert first == second
    assert len(first) > 4


@pytest.mark.parametrize(("max_tokens", "overlap"), [(0, 0), (10, -1)])
def test_invalid_budgets_are_rejected(max_tokens: int, overlap: int) -> None:
    note = parse_note("text", fallback_title="n")
    with pytest.raises(ValueError, match="max_tokens"):
        chunk_note(note, max_tokens=max_tokens, overlap=overlap)


def test_a_huge_single_line_is_chunked_without_holding_copies_of_it() -> None:
    # What the sync does: chunks consumed one by one as the store writes them. Python's
    # own allocation count (tracemalloc) is exact, so this is a bound, not a timing.
    words = ["alder", "birch", "cedar", "delta", "ember", "fjord", "grove"]
    text = " ".join(words[i % len(words)] for i in range(1_500_000))  # ~9 MB, one line
    note = parse_note(text, fallback_title="huge")
    assert note.body is text  # no frontmatter: the body is not a copy
    tracemalloc.start()
    try:
        count = sum(1 for _ in iter_chunks(note, max_tokens=400, overlap=80))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count > 1000
    assert peak < len(text) // 2, f"peak {peak} bytes while chunking {len(text)} characters"
