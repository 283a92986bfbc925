"""JSON and JSONC edited in place: the member changed, every other byte as it was."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apus.clients.jsonc import JsonDocument, JsonSyntaxError

ENTRY = {"command": "/opt/apus/bin/apus", "args": ["--vault", "/home/me/notes", "mcp"]}

VSCODE_JSONC = """{
  // Servers I use at work
  "servers": {
    "github": {
      "type": "http",
      "url": "https://example.test/mcp" /* the proxy */
    }, // trailing comma: JSONC allows it
  },
  "inputs": [],
}
"""


def test_a_server_is_added_beside_comments_and_trailing_commas() -> None:
    document = JsonDocument(VSCODE_JSONC, comments=True)
    after = document.set(["servers", "apus"], ENTRY)
    assert "// Servers I use at work" in after
    assert '"url": "https://example.test/mcp" /* the proxy */' in after
    assert "}, // trailing comma: JSONC allows it" in after
    edited = JsonDocument(after, comments=True)
    assert edited.get(["servers", "apus"]) == ENTRY
    assert edited.get(["servers", "github", "type"]) == "http"
    # Indented as its neighbour is, inside the object it belongs to.
    assert '\n    "apus": {\n      "command": "/opt/apus/bin/apus",' in after
    assert edited.remove(["servers", "apus"]) == VSCODE_JSONC


def test_a_comment_after_the_last_member_stays_on_its_line() -> None:
    text = '{\n  "mcpServers": {\n    "other": {"command": "x"} // mine\n  }\n}\n'
    after = JsonDocument(text, comments=True).set(["mcpServers", "apus"], ENTRY)
    assert '"other": {"command": "x"}, // mine\n    "apus": {' in after
    assert JsonDocument(after, comments=True).remove(["mcpServers", "apus"]) == text


def test_a_missing_table_is_made_and_an_empty_file_gets_one() -> None:
    text = '{\n\t"theme": "dark"\n}'
    after = JsonDocument(text, comments=False).set(["mcpServers", "apus"], ENTRY)
    assert after.startswith('{\n\t"theme": "dark",\n\t"mcpServers": {\n\t\t"apus": {')
    assert json.loads(after) == {"theme": "dark", "mcpServers": {"apus": ENTRY}}
    empty = JsonDocument("", comments=False).set(["mcpServers", "apus"], ENTRY)
    assert json.loads(empty) == {"mcpServers": {"apus": ENTRY}}
    assert empty.endswith("}\n")


def test_a_file_on_one_line_stays_on_one_line() -> None:
    text = '{"numStartups": 3, "mcpServers": {"a": {"command": "b"}}}'
    after = JsonDocument(text, comments=False).set(["mcpServers", "apus"], ENTRY)
    assert "\n" not in after
    assert JsonDocument(after, comments=False).remove(["mcpServers", "apus"]) == text


def test_an_existing_member_is_replaced_in_place() -> None:
    text = '{\n  "mcpServers": {\n    "apus": {"command": "old"},\n    "z": 1\n  }\n}\n'
    after = JsonDocument(text, comments=False).set(["mcpServers", "apus", "command"], "new")
    assert after == text.replace('"old"', '"new"')


def test_elements_are_appended_and_removed() -> None:
    text = '{\n  "a": [\n    1,\n    2\n  ]\n}'
    appended = JsonDocument(text, comments=False).append(["a"], {"x": 1})
    assert json.loads(appended) == {"a": [1, 2, {"x": 1}]}
    assert JsonDocument(appended, comments=False).remove(["a", 2]) == text
    assert json.loads(JsonDocument(appended, comments=False).remove(["a", 0])) == {
        "a": [2, {"x": 1}]
    }


def test_the_only_member_removed_leaves_an_empty_object() -> None:
    text = '{\n  "mcpServers": {\n    "apus": {"command": "x"}\n  },\n  "k": 1\n}\n'
    after = JsonDocument(text, comments=False).remove(["mcpServers", "apus"])
    assert after == '{\n  "mcpServers": {},\n  "k": 1\n}\n'


def test_a_byte_order_mark_is_kept() -> None:
    text = '\ufeff{\n  "a": 1\n}\n'
    after = JsonDocument(text, comments=False).set(["mcpServers", "apus"], ENTRY)
    assert after.startswith("\ufeff{")
    assert JsonDocument(after, comments=False).remove(["mcpServers", "apus"]).startswith("\ufeff")


@pytest.mark.parametrize(
    ("text", "comments", "message", "line", "column"),
    [
        ('{"a": 1,}', False, "Trailing comma", 1, 8),
        ('{\n  "a" 1\n}', False, "Expecting ':' delimiter", 2, 7),
        ('{"a": tru}', False, "Expecting value", 1, 7),
        ('{\n  // note\n  "a": 1\n}', False, "Comments are not allowed", 2, 3),
        ('{"a": [1, 2}', False, "Expecting ',' delimiter or ']'", 1, 12),
        ('{"a": 1} {"b": 2}', False, "Extra data", 1, 10),
        ('{"a": 1 /* open', True, "Unterminated comment", 1, 9),
        ('{"a": "line\nbreak"}', False, "Expecting a value", 1, 7),
    ],
)
def test_a_broken_file_is_reported_where_it_breaks(
    text: str, comments: bool, message: str, line: int, column: int
) -> None:
    with pytest.raises(JsonSyntaxError) as raised:
        JsonDocument(text, comments=comments)
    assert message in raised.value.message
    assert (raised.value.line, raised.value.column) == (line, column)


def test_comment_markers_inside_strings_are_text() -> None:
    text = '{"url": "https://x.test//a/*b*/", "n": "\\"//"}'
    document = JsonDocument(text, comments=False)
    assert document.data == {"url": "https://x.test//a/*b*/", "n": '"//'}


_keys = st.text(st.characters(codec="utf-8", exclude_characters='"\\'), min_size=1, max_size=8)
_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)


@given(
    others=st.dictionaries(_keys.filter(lambda key: key != "apus"), _values, max_size=4),
    rest=st.dictionaries(_keys.filter(lambda key: key != "mcpServers"), _values, max_size=4),
    indent=st.sampled_from([None, 2, 4, "\t"]),
)
def test_adding_then_removing_gives_back_the_same_bytes(
    others: dict[str, object], rest: dict[str, object], indent: int | str | None
) -> None:
    text = json.dumps({**rest, "mcpServers": others}, indent=indent, ensure_ascii=False)
    added = JsonDocument(text, comments=False).set(["mcpServers", "apus"], ENTRY)
    parsed = json.loads(added)
    assert parsed["mcpServers"] == {**others, "apus": ENTRY}
    assert {key: value for key, value in parsed.items() if key != "mcpServers"} == rest
    assert JsonDocument(added, comments=False).remove(["mcpServers", "apus"]) == text
