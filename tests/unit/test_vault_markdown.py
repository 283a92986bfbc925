"""Frontmatter parsing (title, date, importance, triggers), titles and body line numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from apus.vault.markdown import NoteMeta, ParsedNote, parse_note, split_lines


def parse_file(tmp_path: Path, content: str, *, newline: str = "\n") -> tuple[str, ParsedNote]:
    """Write `content` to a real note file, read it back and parse it."""
    path = tmp_path / "note.md"
    path.write_bytes(content.replace("\n", newline).encode("utf-8"))
    text = path.read_bytes().decode("utf-8")
    return text, parse_note(text, fallback_title=path.stem)


def test_no_frontmatter_body_is_the_whole_text(tmp_path: Path) -> None:
    text, note = parse_file(tmp_path, "# Project Apus\n\nSome text.\n")
    assert note.meta == NoteMeta()
    assert note.body == text
    assert note.body_start_line == 1
    assert note.title == "Project Apus"


def test_title_falls_back_to_the_file_stem(tmp_path: Path) -> None:
    _, note = parse_file(tmp_path, "## Only a second-level heading\n\ntext\n")
    assert note.title == "note"


def test_h1_inside_a_code_fence_is_not_the_title(tmp_path: Path) -> None:
    content = "```bash\n# a shell comment\n```\n\n~~~\n# also code\n~~~\n# Real Title ##\n"
    _, note = parse_file(tmp_path, content)
    assert note.title == "Real Title"


def test_full_frontmatter(tmp_path: Path) -> None:
    content = (
        "---\n"
        "title: Deploy checklist\n"
        "date: 2025-03-04\n"
        "importance: 8\n"
        "triggers:\n"
        "  - deploy\n"
        "  - release day\n"
        "---\n"
        "# Heading that is not the title\n"
        "Body text.\n"
    )
    _, note = parse_file(tmp_path, content)
    assert note.meta == NoteMeta(
        title="Deploy checklist",
        date="2025-03-04",
        importance=8.0,
        triggers=("deploy", "release day"),
    )
    assert note.title == "Deploy checklist"
    assert note.body == "# Heading that is not the title\nBody text.\n"
    assert note.body_start_line == 9


def test_frontmatter_closed_with_dots_and_crlf_line_endings(tmp_path: Path) -> None:
    _, note = parse_file(tmp_path, "---\ntitle: Dots\n...\nline one\n", newline="\r\n")
    assert note.meta.title == "Dots"
    assert note.body == "line one\r\n"
    assert note.body_start_line == 4


def test_leading_bom_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.md"
    path.write_bytes(b"\xef\xbb\xbf---\ntitle: With BOM\n---\nbody\n")
    note = parse_note(path.read_text(encoding="utf-8"), fallback_title="bom")
    assert note.meta.title == "With BOM"
    assert note.body == "body\n"
    assert note.body_start_line == 4


@pytest.mark.parametrize(
    "frontmatter",
    [
        "title: [unclosed\nimportance: 5\n",  # invalid YAML
        "- just\n- a list\n",  # valid YAML, not a mapping
        "plain scalar text\n",
        "",  # empty frontmatter
        "key: value\n\tbad: tab indent\n",
    ],
)
def test_unusable_frontmatter_is_absent_metadata_but_not_body(
    tmp_path: Path, frontmatter: str
) -> None:
    content = f"---\n{frontmatter}---\n# Title\nbody\n"
    _, note = parse_file(tmp_path, content)
    assert note.meta == NoteMeta()
    assert note.body == "# Title\nbody\n"
    assert note.body_start_line == frontmatter.count("\n") + 3
    assert note.title == "Title"


def test_unclosed_frontmatter_is_body(tmp_path: Path) -> None:
    text, note = parse_file(tmp_path, "---\ntitle: never closed\n# Heading\n")
    assert note.meta == NoteMeta()
    assert note.body == text
    assert note.body_start_line == 1
    assert note.title == "Heading"


def test_a_thematic_break_later_in_the_file_is_not_frontmatter(tmp_path: Path) -> None:
    text, note = parse_file(tmp_path, "intro\n---\ntitle: nope\n---\n")
    assert note.meta == NoteMeta()
    assert note.body == text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", 1.0),
        ("10", 10.0),
        ("7.5", 7.5),
        ('"3"', 3.0),
        ("' 4.5 '", 4.5),
        ("0", None),
        ("11", None),
        ("-2", None),
        ("high", None),
        ("true", None),
        (".nan", None),
        (".inf", None),
        ("[5]", None),
        ("null", None),
    ],
)
def test_importance_values(tmp_path: Path, value: str, expected: float | None) -> None:
    _, note = parse_file(tmp_path, f"---\nimportance: {value}\n---\nbody\n")
    assert note.meta.importance == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("deploy", ("deploy",)),
        ('"  padded  "', ("padded",)),
        ("[deploy, ' release ', '', 3, null]", ("deploy", "release")),
        ('""', ()),
        ("42", ()),
        ("{a: b}", ()),
    ],
)
def test_trigger_values(tmp_path: Path, value: str, expected: tuple[str, ...]) -> None:
    _, note = parse_file(tmp_path, f"---\ntriggers: {value}\n---\nbody\n")
    assert note.meta.triggers == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2025-01-05", "2025-01-05"),
        ('"2025-01-05"', "2025-01-05"),
        ("2025-01-05 10:30:00", "2025-01-05"),
        ("2025-01-05T10:30:00Z", "2025-01-05"),
        ("2025-02-30", None),
        ("2025-13-01", None),
        ("20250105", None),
        ("yesterday", None),
        ("2025/01/05", None),
    ],
)
def test_date_values(tmp_path: Path, value: str, expected: str | None) -> None:
    _, note = parse_file(tmp_path, f"---\ndate: {value}\nimportance: 6\n---\nbody\n")
    assert note.meta.date == expected
    # A bad date voids only itself, not the rest of the frontmatter.
    assert note.meta.importance == 6.0


def test_explicit_yaml_timestamp_is_accepted(tmp_path: Path) -> None:
    _, note = parse_file(tmp_path, "---\ndate: !!timestamp 2024-12-31\n---\n")
    assert note.meta.date == "2024-12-31"


def test_non_string_or_blank_title_falls_back_to_h1(tmp_path: Path) -> None:
    _, note = parse_file(tmp_path, "---\ntitle: 1984\n---\n# Orwell\n")
    assert note.meta.title is None
    assert note.title == "Orwell"
    _, note = parse_file(tmp_path, "---\ntitle: '   '\n---\nno heading\n")
    assert note.title == "note"


def test_split_lines_only_splits_on_newlines() -> None:
    assert split_lines("a\r\nb\rc\nd\u2028e\x0cf") == ["a\r\n", "b\r", "c\n", "d\u2028e\x0cf"]
    assert split_lines("") == []
    assert split_lines("x\n") == ["x\n"]
