"""Frontmatter (title, date, importance, triggers) and headings of one Markdown note."""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass

import yaml

# Only \r\n, \r and \n end a line, as in editors; str.splitlines() would also split on
# \x0c, \u2028 and others, and line numbers would drift from what the user sees.
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_FRONTMATTER_OPEN = "---"
_FRONTMATTER_CLOSE = frozenset({"---", "..."})
_ATX_HEADING_RE = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE_OPEN_RE = re.compile(r" {0,3}(`{3,}(?!.*`)|~{3,})")
_ISO_DATE_RE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ].*)?", re.ASCII)
_IMPORTANCE_RANGE = (1.0, 10.0)


@dataclass(frozen=True)
class NoteMeta:
    """What a note says about itself in its YAML frontmatter (all optional)."""

    title: str | None = None
    date: str | None = None  # ISO date string as written (YYYY-MM-DD), validated
    importance: float | None = None  # 1..10 when valid, else None
    triggers: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # without a leading `#`, as written


@dataclass(frozen=True)
class ParsedNote:
    """A note split into frontmatter metadata and body.

    `body_start_line` is the 1-based line number in the file where `body` begins, so chunk
    line ranges refer to lines of the file the user edits.
    """

    meta: NoteMeta
    body: str
    body_start_line: int
    title: str  # meta.title, else the first H1, else the file stem


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their endings, split only at \\r\\n, \\r and \\n."""
    return _LINE_RE.findall(text)


def heading(line: str) -> tuple[int, str] | None:
    """(level, text) when `line` is an ATX heading (`#` to `######`), else None."""
    match = _ATX_HEADING_RE.fullmatch(line.rstrip("\r\n"))
    if match is None:
        return None
    return len(match.group(1)), (match.group(2) or "").strip()


class FenceTracker:
    """Follows fenced code blocks line by line, so `#` lines inside code are not headings."""

    def __init__(self) -> None:
        self._fence: str | None = None

    @property
    def inside(self) -> bool:
        return self._fence is not None

    def feed(self, line: str) -> bool:
        """Account for `line`; True when it opens, closes or sits inside a fence."""
        stripped = line.rstrip("\r\n")
        if self._fence is None:
            match = _FENCE_OPEN_RE.match(stripped)
            if match is None:
                return False
            self._fence = match.group(1)
            return True
        closing = stripped.lstrip(" ")
        indent = len(stripped) - len(closing)
        closing = closing.rstrip(" \t")
        char = self._fence[0]
        if indent <= 3 and len(closing) >= len(self._fence) and closing == char * len(closing):
            self._fence = None
        return True


# libyaml's parser is about ten times faster than the pure-Python one, when present.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _NoDatesLoader(_SafeLoader):
    """Safe loader that leaves timestamps as strings.

    PyYAML turns `date: 2025-02-30` into a ValueError for the whole document; keeping it a
    string lets one bad date void only the date, not the rest of the frontmatter.
    """


_NoDatesLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
}


def _load_frontmatter(source: str) -> dict[object, object] | None:
    try:
        data = yaml.load(source, Loader=_NoDatesLoader)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        # Notes are user content: any frontmatter we cannot read is treated as absent.
        return None
    return data if isinstance(data, dict) else None


def _split_frontmatter(lines: list[str]) -> tuple[str | None, int]:
    """(frontmatter source or None, index of the first body line)."""
    if not lines or lines[0].rstrip() != _FRONTMATTER_OPEN:
        return None, 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in _FRONTMATTER_CLOSE:
            return "".join(lines[1:index]), index + 1
    return None, 0


def _meta_date(value: object) -> str | None:
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        match = _ISO_DATE_RE.fullmatch(value.strip())
        if match is not None:
            try:
                return dt.date.fromisoformat(match.group(1)).isoformat()
            except ValueError:
                return None
    return None


def _meta_importance(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    low, high = _IMPORTANCE_RANGE
    return float(value) if low <= value <= high else None


def _meta_triggers(value: object) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        return ()
    return tuple(item.strip() for item in items if isinstance(item, str) and item.strip())


def _meta_tags(value: object) -> tuple[str, ...]:
    """`tags: [a, b]`, a YAML list, or `tags: a, b` / `tags: "#a #b"` (Obsidian writes all
    three); `#` prefixes dropped, duplicates kept once."""
    if isinstance(value, str):
        items: list[object] = [part for part in re.split(r"[,\s]+", value) if part]
    elif isinstance(value, list):
        items = value
    else:
        return ()
    tags = (str(item).strip().lstrip("#").strip() for item in items if isinstance(item, str | int))
    return tuple(dict.fromkeys(tag for tag in tags if tag))


def _meta_title(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _first_h1(lines: list[str]) -> str | None:
    fences = FenceTracker()
    for line in lines:
        if fences.feed(line):
            continue
        found = heading(line)
        if found is not None and found[0] == 1 and found[1]:
            return found[1]
    return None


def parse_note(text: str, *, fallback_title: str) -> ParsedNote:
    """Split `text` into frontmatter metadata and body; never raises on odd content."""
    text = text.removeprefix("\ufeff")
    lines = split_lines(text)
    source, body_index = _split_frontmatter(lines)
    data = _load_frontmatter(source) if source is not None else None
    meta = NoteMeta()
    if data is not None:
        meta = NoteMeta(
            title=_meta_title(data.get("title")),
            date=_meta_date(data.get("date")),
            importance=_meta_importance(data.get("importance")),
            triggers=_meta_triggers(data.get("triggers")),
            tags=_meta_tags(data.get("tags")),
        )
    body_lines = lines[body_index:]
    title = meta.title or _first_h1(body_lines) or fallback_title
    return ParsedNote(
        meta=meta, body="".join(body_lines), body_start_line=body_index + 1, title=title
    )
