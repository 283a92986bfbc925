"""Frontmatter (title, date, importance, triggers) and headings of one Markdown note."""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    import yaml

_T = TypeVar("_T")

# Only \r\n, \r and \n end a line, as in editors; str.splitlines() would also split on
# \x0c, \u2028 and others, and line numbers would drift from what the user sees.
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_FRONTMATTER_OPEN = "---"
_FRONTMATTER_CLOSE = frozenset({"---", "..."})
_ATX_HEADING_RE = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*")
_FENCE_OPEN_RE = re.compile(r" {0,3}(`{3,}(?!.*`)|~{3,})")
_ISO_DATE_RE = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ].*)?", re.ASCII)
_IMPORTANCE_RANGE = (1.0, 10.0)
# An integer tag longer than this is no tag (64 bits: about 19 decimal digits).
_MAX_INT_TAG_BITS = 64


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
    # Frontmatter fields left out because their value could not be read, each with why:
    # the note is indexed without them (status and doctor list them).
    problems: tuple[str, ...] = ()


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


@functools.cache
def _no_dates_loader() -> type[yaml.SafeLoader]:
    """Safe loader that leaves timestamps as strings, made on first use (a search, which
    never reads frontmatter, does not import PyYAML).

    PyYAML turns `date: 2025-02-30` into a ValueError for the whole document; keeping it a
    string lets one bad date void only the date, not the rest of the frontmatter. libyaml's
    parser is about ten times faster than the pure-Python one, when present; its loader
    offers the pure one's interface, so the checker is shown the one always there.
    """
    import yaml

    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = cast("type[yaml.SafeLoader]", type("_NoDatesLoader", (base,), {}))
    loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    return loader


def _load_frontmatter(source: str) -> tuple[dict[object, object] | None, str | None]:
    """The frontmatter's mapping (None when it is not one), and why it could not be read."""
    import yaml

    try:
        data = yaml.load(source, Loader=_no_dates_loader())
    except yaml.YAMLError as exc:
        # Notes are user content: frontmatter we cannot read is treated as absent, and said.
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return None, f"frontmatter left out: it is not valid YAML{where}"
    except (ValueError, TypeError, RecursionError, OverflowError, MemoryError) as exc:
        # A number past CPython's 4300-digit limit, nesting too deep for the parser...
        return None, (
            f"frontmatter left out: it cannot be read ({type(exc).__name__}: {_short(str(exc))})"
        )
    return (data if isinstance(data, dict) else None), None


def _split_frontmatter(lines: list[str]) -> tuple[str | None, int]:
    """(frontmatter source or None, index of the first body line)."""
    if not lines or lines[0].rstrip() != _FRONTMATTER_OPEN:
        return None, 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in _FRONTMATTER_CLOSE:
            return "".join(lines[1:index]), index + 1
    return None, 0


class _Refused(ValueError):
    """A frontmatter value present but unusable: the field is left out, with this reason."""


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
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    low, high = _IMPORTANCE_RANGE
    if isinstance(value, int):
        # Compared as an int: `1` followed by 400 zeros is a valid YAML int that float()
        # and math.isfinite() refuse with OverflowError.
        if low <= value <= high:
            return float(value)
        raise _Refused(f"{_describe_int(value)} is not a number from 1 to 10")
    if not isinstance(value, float) or not math.isfinite(value):
        return None
    if low <= value <= high:
        return value
    raise _Refused(f"{value:g} is not a number from 1 to 10")


def _describe_int(value: int) -> str:
    """An int as text even past CPython's 4300-digit str() limit (which raises)."""
    if value.bit_length() <= _MAX_INT_TAG_BITS:
        return str(value)
    digits = int(value.bit_length() * math.log10(2)) + 1
    return f"a number of about {digits} digits"


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
    tags = (_tag_text(item) for item in items if isinstance(item, str | int))
    return tuple(dict.fromkeys(tag for tag in tags if tag))


def _tag_text(item: str | int) -> str:
    if isinstance(item, int) and item.bit_length() > _MAX_INT_TAG_BITS:
        # str() of an int past 4300 digits raises ValueError (CPython's conversion limit);
        # no one tags a note with such a number: the field is left out, and that is said.
        raise _Refused(f"a tag is {_describe_int(item)}")
    return str(item).strip().lstrip("#").strip()


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
    # One line (a huge minified note): the text itself, not a copy made by the split.
    lines = split_lines(text) if "\n" in text or "\r" in text else [text] if text else []
    source, body_index = _split_frontmatter(lines)
    data, unreadable = _load_frontmatter(source) if source is not None else (None, None)
    meta, problems = _read_meta(data) if data is not None else (NoteMeta(), [])
    if unreadable is not None:
        problems.insert(0, unreadable)
    body_lines = lines[body_index:]
    title = meta.title or _first_h1(body_lines) or fallback_title
    return ParsedNote(
        meta=meta,
        # Without frontmatter the body is the text itself: a huge note is not held twice.
        body=text if body_index == 0 else "".join(body_lines),
        body_start_line=body_index + 1,
        title=title,
        problems=tuple(problems),
    )


def _read_meta(data: dict[object, object]) -> tuple[NoteMeta, list[str]]:
    """The fields of `data`, each read on its own: a value no reader expected (a number of
    thousands of digits, a structure nested too deep) leaves out that field alone, and says
    so, instead of stopping the note, or the whole sync, with a traceback."""
    problems: list[str] = []
    meta = NoteMeta(
        title=_read_field(data, "title", _meta_title, None, problems),
        date=_read_field(data, "date", _meta_date, None, problems),
        importance=_read_field(data, "importance", _meta_importance, None, problems),
        triggers=_read_field(data, "triggers", _meta_triggers, (), problems),
        tags=_read_field(data, "tags", _meta_tags, (), problems),
    )
    return meta, problems


def _read_field(
    data: dict[object, object],
    name: str,
    reader: Callable[[object], _T],
    default: _T,
    problems: list[str],
) -> _T:
    """`reader` applied to the field `name`, or `default` with why added to `problems`."""
    try:
        return reader(data.get(name))
    except _Refused as exc:
        problems.append(f"frontmatter `{name}` left out: {exc}")
    except Exception as exc:  # user content: any failure of one field voids that field
        problems.append(
            f"frontmatter `{name}` left out: its value cannot be read "
            f"({type(exc).__name__}: {_short(str(exc))})"
        )
    return default


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
