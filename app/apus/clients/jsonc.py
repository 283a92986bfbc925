"""JSON and JSONC files edited in place: one member or element changes, every other byte stays.

Python has no maintained library for this (VS Code's own `jsonc-parser` computes such edits in
TypeScript). json-five keeps comments through a model of the whole document, but it read a
2.2 MB `~/.claude.json`-shaped file in 2.9 s (this module: 0.24 s) and brings a parser
generator and the `regex` package with it. Here the standard `json` module decides whether a
file is valid and what it holds; this module only finds where each value lies (comments and
JSONC's trailing commas blanked out first, so positions stay those of the file) and splices
the text at those positions, indented like its neighbours.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# One lexical pass: strings (so that `//` inside one is not a comment), then comments.
_LEXEMES = re.compile(r'"(?:[^"\\]|\\.)*"?|//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/)?', re.DOTALL)
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
_SCALAR = re.compile(r"[^\s,:\[\]{}\"]+")
_SPACE = re.compile(r"[ \t\r\n]*")

Path = Sequence[str | int]


class JsonSyntaxError(ValueError):
    """The text is not the JSON (or JSONC) its file must hold; `line` and `column` from 1."""

    def __init__(self, message: str, text: str, position: int) -> None:
        self.line = text.count("\n", 0, position) + 1
        self.column = position - (text.rfind("\n", 0, position) + 1) + 1
        self.message = message
        super().__init__(f"{message} (line {self.line}, column {self.column})")


@dataclass(frozen=True)
class Node:
    """Where one value lies: `start`/`end` of the value itself, `lead` where its member (the
    key) or element starts; containers hold their children in order."""

    kind: str  # "object", "array" or "scalar"
    start: int
    end: int
    lead: int
    key: str | None = None
    children: tuple[Node, ...] = ()
    trailing_comma: int | None = None  # JSONC: the comma after the last child

    def child(self, step: str | int) -> Node | None:
        if self.kind == "object" and isinstance(step, str):
            found = [child for child in self.children if child.key == step]
            return found[-1] if found else None  # JSON's rule: the last of duplicate keys wins
        if self.kind == "array" and isinstance(step, int) and 0 <= step < len(self.children):
            return self.children[step]
        return None


class JsonDocument:
    """A parsed JSON or JSONC text: its data, and edits that return the new text."""

    def __init__(self, text: str, *, comments: bool) -> None:
        """Raises JsonSyntaxError. `comments`: JSONC (comments and trailing commas allowed)."""
        self.bom = "\ufeff" if text.startswith("\ufeff") else ""
        self.text = text[len(self.bom) :]
        self.comments = comments
        if not self.text.strip():
            self.text = ""
            self.data: Any = {}
            self.root = Node("object", 0, 0, 0)
            return
        self._blank = _blank_comments(self.text, allowed=comments)
        self._trailing: list[int] = []
        position, root = self._value(_skip(self._blank, 0))
        rest = _skip(self._blank, position)
        if rest < len(self._blank):
            raise JsonSyntaxError("Extra data after the JSON value", self.text, rest)
        # json.loads reads the text without JSONC's trailing commas (blanked, like comments).
        plain = _apply(self._blank, [(comma, comma + 1, " ") for comma in self._trailing])
        try:
            self.data = json.loads(plain)
        except json.JSONDecodeError as exc:
            raise JsonSyntaxError(exc.msg, self.text, exc.pos) from None
        self.root = root

    # -- reading -----------------------------------------------------------------------------

    def get(self, path: Path) -> Any:
        """The value at `path` (keys and indices), or None."""
        value = self.data
        for step in path:
            if isinstance(step, str) and isinstance(value, dict):
                value = value.get(step)
            elif isinstance(step, int) and isinstance(value, list) and 0 <= step < len(value):
                value = value[step]
            else:
                return None
        return value

    def node(self, path: Path) -> Node | None:
        current: Node | None = self.root
        for step in path:
            current = current.child(step) if current else None
        return current

    # -- edits: each returns the whole new text ----------------------------------------------

    def set(self, path: Path, value: Any) -> str:
        """Put `value` at `path` (its last step a key), making the objects on the way."""
        if not self.text:
            return self.bom + _nest(path, value, "  ") + "\n"
        parent_path, key = list(path[:-1]), path[-1]
        assert isinstance(key, str)
        # Walk down as far as the objects exist; the rest is made, nested, in one member.
        depth = 0
        parent = self.root
        while depth < len(parent_path):
            below = parent.child(parent_path[depth])
            if below is None:
                break
            parent, depth = below, depth + 1
        if parent.kind != "object":
            raise ValueError(f"{'.'.join(map(str, path[: depth + 1]))} is not an object")
        if depth < len(parent_path):
            missing = [*parent_path[depth:], key]
            return self._insert(parent, str(missing[0]), _nest_value(missing[1:], value))
        existing = parent.child(key)
        if existing is None:
            return self._insert(parent, key, value)
        indent = self._indent_at(existing.lead)
        rendered = _render(value, self._unit(), indent if indent is not None else None)
        return self._splice([(existing.start, existing.end, rendered)])

    def append(self, path: Path, value: Any) -> str:
        """Add `value` at the end of the array at `path`."""
        array = self.node(path)
        if array is None or array.kind != "array":
            raise ValueError(f"{'.'.join(map(str, path))} is not an array")
        return self._insert(array, None, value)

    def remove(self, path: Path) -> str:
        """Take out the member or element at `path` with its comma (the text, when absent)."""
        parent = self.node(path[:-1])
        target = parent.child(path[-1]) if parent else None
        if parent is None or target is None:
            return self.bom + self.text
        index = parent.children.index(target)
        blank = self._blank
        edits: list[tuple[int, int, str]] = []
        lines = self._whole_lines(target)
        last = index == len(parent.children) - 1
        if lines is not None:
            edits.append((lines[0], lines[1], ""))
            if last and index > 0 and parent.trailing_comma is None:
                comma = _skip(blank, parent.children[index - 1].end)
                if comma < lines[0]:
                    edits.append((comma, comma + 1, ""))
        elif index > 0:
            edits.append((parent.children[index - 1].end, target.end, ""))
        elif not last:
            edits.append((target.lead, parent.children[1].lead, ""))
        else:
            end = target.end
            if parent.trailing_comma is not None:
                end = parent.trailing_comma + 1
            edits.append((target.lead, end, ""))
        if len(parent.children) == 1:
            # The only child gone: an object or array left with nothing but space closes up.
            offset = parent.start + 1
            inner = [(start - offset, end - offset, new) for start, end, new in edits]
            if not _apply(self.text[offset : parent.end - 1], inner).strip():
                edits = [(offset, parent.end - 1, "")]
        return self._splice(edits)

    # -- parsing -------------------------------------------------------------------------------

    def _value(self, i: int, key: str | None = None, lead: int | None = None) -> tuple[int, Node]:
        blank = self._blank
        lead = i if lead is None else lead
        if i >= len(blank):
            raise JsonSyntaxError("Expecting a value", self.text, i)
        opening = blank[i]
        if opening in "{[":
            return self._container(i, key, lead)
        match = _STRING.match(blank, i) if opening == '"' else _SCALAR.match(blank, i)
        if match is None:
            raise JsonSyntaxError("Expecting a value", self.text, i)
        return match.end(), Node("scalar", i, match.end(), lead, key)

    def _container(self, i: int, key: str | None, lead: int) -> tuple[int, Node]:
        blank, text = self._blank, self.text
        closing = "}" if blank[i] == "{" else "]"
        kind = "object" if closing == "}" else "array"
        children: list[Node] = []
        trailing: int | None = None
        position = _skip(blank, i + 1)
        while position < len(blank) and blank[position] != closing:
            if kind == "object":
                match = _STRING.match(blank, position)
                if match is None:
                    raise JsonSyntaxError("Expecting a property name", text, position)
                name = json.loads(match.group())
                colon = _skip(blank, match.end())
                if blank[colon : colon + 1] != ":":
                    raise JsonSyntaxError("Expecting ':' delimiter", text, colon)
                position, child = self._value(_skip(blank, colon + 1), name, position)
            else:
                position, child = self._value(position)
            children.append(child)
            position = _skip(blank, position)
            if blank[position : position + 1] == ",":
                comma = position
                position = _skip(blank, position + 1)
                if blank[position : position + 1] == closing:
                    if not self.comments:
                        raise JsonSyntaxError("Trailing comma", text, comma)
                    trailing = comma
                    self._trailing.append(comma)
            elif blank[position : position + 1] != closing:
                raise JsonSyntaxError(f"Expecting ',' delimiter or '{closing}'", text, position)
        if position >= len(blank):
            raise JsonSyntaxError(f"Unterminated {kind}", text, i)
        end = position + 1
        return end, Node(kind, i, end, lead, key, tuple(children), trailing)

    # -- layout ----------------------------------------------------------------------------------

    def _unit(self) -> str:
        """The file's indentation step: the first indented line's, else two spaces."""
        match = re.search(r"\n([ \t]+)\S", self.text)
        if match is None:
            return "  "
        return "\t" if "\t" in match.group(1) else match.group(1)

    def _indent_at(self, position: int) -> str | None:
        """The whitespace before `position` on its line, or None when something precedes it."""
        line_start = self.text.rfind("\n", 0, position) + 1
        before = self.text[line_start:position]
        return before if not before.strip() else None

    def _whole_lines(self, child: Node) -> tuple[int, int] | None:
        """The lines a child fills alone (with its comma and a comment after it), if it does."""
        if self._indent_at(child.lead) is None:
            return None
        blank = self._blank
        after = _end_of_space(blank, child.end)
        if blank[after : after + 1] == ",":
            after = _end_of_space(blank, after + 1)
        if after < len(blank) and blank[after] != "\n":
            return None
        start = self.text.rfind("\n", 0, child.lead)
        return (start, after) if start >= 0 else None

    def _insert(self, container: Node, key: str | None, value: Any) -> str:
        unit = self._unit()
        text = self.text
        if container.children:
            last = container.children[-1]
            indent = self._indent_at(last.lead)
            if indent is None:  # members on one line: stay on it
                member = _member(key, _render(value, unit, None))
                at = container.trailing_comma + 1 if container.trailing_comma else last.end
                comma = "" if container.trailing_comma else ","
                return self._splice([(at, at, f"{comma} {member}")])
            member = _member(key, _render(value, unit, indent))
            lines = self._whole_lines(last)
            if container.trailing_comma is not None:
                at = lines[1] if lines else container.trailing_comma + 1
                return self._splice([(at, at, f"\n{indent}{member},")])
            at = lines[1] if lines else last.end
            return self._splice([(last.end, last.end, ","), (at, at, f"\n{indent}{member}")])
        if "\n" not in text.strip():  # a file on one line stays on one line
            member = _member(key, _render(value, unit, None))
            return self._splice([(container.start + 1, container.end - 1, member)])
        outer = self._indent_at(container.lead)
        outer = outer if outer is not None else ""
        indent = outer + unit
        member = _member(key, _render(value, unit, indent))
        close = container.end - 1
        inside_end = close
        while inside_end > container.start + 1 and text[inside_end - 1] in " \t\r\n":
            inside_end -= 1
        return self._splice([(inside_end, close, f"\n{indent}{member}\n{outer}")])

    def _splice(self, edits: list[tuple[int, int, str]]) -> str:
        return self.bom + _apply(self.text, edits)


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Edits given in text order; of two at one position, the first listed comes first."""
    for start, end, replacement in reversed(sorted(edits, key=lambda edit: edit[0])):
        text = text[:start] + replacement + text[end:]
    return text


def _end_of_space(blank: str, position: int) -> int:
    """Past spaces and tabs (blanked comments included), not past a line break."""
    while position < len(blank) and blank[position] in " \t\r":
        position += 1
    return position


def _skip(blank: str, position: int) -> int:
    match = _SPACE.match(blank, position)
    return match.end() if match else position


def _blank_comments(text: str, *, allowed: bool) -> str:
    """The text with each comment replaced by spaces (line breaks kept), so positions hold."""
    parts: list[str] = []
    last = 0
    for match in _LEXEMES.finditer(text):
        lexeme = match.group()
        if lexeme.startswith('"'):
            continue
        if not allowed:
            raise JsonSyntaxError("Comments are not allowed in this file", text, match.start())
        if lexeme.startswith("/*") and (len(lexeme) < 4 or not lexeme.endswith("*/")):
            raise JsonSyntaxError("Unterminated comment", text, match.start())
        parts.append(text[last : match.start()])
        parts.append(re.sub(r"[^\n]", " ", lexeme))
        last = match.end()
    parts.append(text[last:])
    return "".join(parts)


def _render(value: Any, unit: str, indent: str | None) -> str:
    """JSON for a value placed at `indent` (None: on one line)."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False)
    step: str | int = unit if "\t" in unit else len(unit)
    return json.dumps(value, indent=step, ensure_ascii=False).replace("\n", "\n" + indent)


def _member(key: str | None, rendered: str) -> str:
    return rendered if key is None else f"{json.dumps(key, ensure_ascii=False)}: {rendered}"


def _nest_value(keys: Sequence[str | int], value: Any) -> Any:
    for key in reversed(keys):
        value = {key: value}
    return value


def _nest(path: Path, value: Any, unit: str) -> str:
    return _render(_nest_value(path, value), unit, "")
