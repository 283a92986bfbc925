"""Dates in an agent's words: `since`/`until` values, and a time expression inside a query.

Parsing is dateparser's (relative forms, month and weekday names, ISO dates and times, from
a given "today"), together with the period it reports (day, week, month, year), which is
what turns "last week" into Monday to Sunday and "in May" into the whole month. What is
written here is only which of its finds count as a time expression in a query: dateparser
also reads "May I ask", "now", "10 seconds" and a lone "we" as dates, so a find is kept only
when it names a calendar time (an ISO date, yesterday/today, last/this/past + a unit, N units
ago, a weekday), or a month or year after a preposition ("in May", "during 2025").

Everything takes `today`; `today()` is the one reading of the clock, and `APUS_TODAY` fixes
it (tests, and evaluations of dated questions, answer the same on any day).
"""

from __future__ import annotations

import calendar
import datetime as dt
import os
import re
import threading
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from dateparser.date import DateDataParser

Period = Literal["day", "week", "month", "year"]

# dateparser is loaded on first use (about a second), and the MCP server warms it up in a
# thread while a request may load it too: two threads importing different dateparser modules
# at once can meet a partially initialised package, so every load goes through this lock.
_DATEPARSER_LOAD = threading.Lock()


def _load_dateparser() -> None:
    with _DATEPARSER_LOAD:
        import dateparser.date
        import dateparser.search  # noqa: F401  (loaded whole, once, under the lock)


# `7d`, `2w`, `3m` (months: a date filter has no use for minutes), `1y`.
_SHORT = re.compile(r"\A\s*(\d{1,4})\s*([dwmy])\s*\Z", re.IGNORECASE)
_SHORT_UNITS = {"d": "days", "w": "weeks", "m": "months", "y": "years"}
# A rolling span ending today: "the last 7 days", "past 2 weeks".
_ROLLING = re.compile(
    r"\b(?:(?:in|over|during|for|from)\s+)?(?:the\s+)?(?:last|past)\s+(\d{1,3})\s+"
    r"(day|week|month|year)s?\b",
    re.IGNORECASE,
)
_ISO_DAY = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_MONTHS = "|".join(name.lower() for name in (*calendar.month_name[1:], *calendar.month_abbr[1:]))
_WEEKDAYS = "|".join(name.lower() for name in calendar.day_name)
_UNITS = r"(?:day|week|month|year)s?"
# A find is a time expression when it holds one of these.
_CALENDAR = re.compile(
    rf"\b(?:yesterday|today|(?:last|this|past|previous)\s+(?:{_UNITS}|{_WEEKDAYS})"
    rf"|\d+\s+{_UNITS}\s+ago|(?:on\s+|last\s+)?(?:{_WEEKDAYS}))\b"
    rf"|\b\d{{4}}-\d{{2}}-\d{{2}}\b"
    rf"|\b(?:{_MONTHS})\.?\s+\d{{1,4}}(?:st|nd|rd|th)?\b",
    re.IGNORECASE,
)
# A month or a year alone counts only after one of these ("in May", not "May I ask").
_AFTER_PREPOSITION = re.compile(
    rf"\b(?:in|on|during|since|from|until|before|after|of)\s+(?:{_MONTHS}|\d{{4}})\b",
    re.IGNORECASE,
)
_TRIM = re.compile(r"\A(?:(?:in|on|during|since|from|until|before|after|of|over|the)\s+)+", re.I)
ACCEPTED = (
    "YYYY-MM-DD, an ISO timestamp, 7d / 2w / 3m / 1y, yesterday, today, last week, "
    "last month, 3 days ago, last friday, May 2026"
)


def today() -> dt.date:
    """The day "yesterday" and "last week" count from: `APUS_TODAY` (YYYY-MM-DD) when set,
    else the local date."""
    fixed = os.environ.get("APUS_TODAY", "").strip()
    return dt.date.fromisoformat(fixed) if fixed else dt.date.today()


class TimeWordsError(ValueError):
    """A `since`/`until` value that names no date."""

    what = "names no date"
    fix = f"write it as one of {ACCEPTED}"


class DateOutOfRangeError(TimeWordsError):
    """A `since`/`until` value that names a date before year 1 or after year 9999."""

    what = "is out of range (dates run from year 1 to 9999)"
    fix = "give a date or a span within those years, such as 2y or 2020-01-01"


# An amount of a unit ("9999999 days", "5000y"): a span too long for the calendar.
_AMOUNT = re.compile(r"(\d+)\s*(day|week|month|year|[dwmy])s?\b", re.IGNORECASE)
_UNIT_DAYS = {"d": 1.0, "w": 7.0, "m": 30.44, "y": 365.25}


def _beyond_calendar(words: str, today: dt.date) -> bool:
    """Whether a span in `words` reaches past year 1 or year 9999 from `today` (dateparser
    answers such a span with no date at all)."""
    room = min(today - dt.date.min, dt.date.max - today).days
    for amount, unit in _AMOUNT.findall(words):
        if len(amount) > 9 or int(amount) * _UNIT_DAYS[unit[0].lower()] > room:
            return True
    return False


@dataclass(frozen=True)
class DateWindow:
    since: dt.date | None
    until: dt.date | None
    text: str  # the words it was read from


def bound(text: str, *, today: dt.date, end: bool) -> dt.date:
    """The day a `since` (`end=False`: the first day of what `text` names) or `until`
    (`end=True`: its last day) value means."""
    words = text.strip()
    if not words:
        raise TimeWordsError("an empty date")
    try:  # the exact forms first: no guessing about them
        return dt.date.fromisoformat(words)
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(words.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    short = _SHORT.match(words)
    if short:
        amount, unit = short.groups()
        found = _parse(f"{amount} {_SHORT_UNITS[unit.lower()]} ago", today)
        if found is None:
            raise _no_date(words, today)
        return found[0]  # that day itself, not its week or month
    found = _parse(words, today)
    if found is None:
        raise _no_date(words, today)
    first, last = _span(*found)
    return last if end else first


def _no_date(words: str, today: dt.date) -> TimeWordsError:
    if _beyond_calendar(words, today):
        return DateOutOfRangeError(words)
    return TimeWordsError(words)


def window_in_query(query: str, *, today: dt.date) -> tuple[DateWindow, str] | None:
    """The date window a time expression in `query` names, and the query without it (the
    words left are what to search for); None when it names no calendar time."""
    rolling = _ROLLING.search(query)
    if rolling:
        amount, unit = rolling.groups()
        since = _parse(f"{amount} {unit}s ago", today)
        if since is not None:
            text = _TRIM.sub("", rolling.group(0).strip())
            window = DateWindow(since[0], today, text)
            return window, _without(query, rolling.start(), rolling.end())
    if not _is_calendar(query):
        # Every phrase kept below is a calendar time and part of the query, so a query
        # without one has none: no need to load dateparser (a second) for it.
        return None
    _load_dateparser()
    from dateparser.search import search_dates

    finds = search_dates(query, languages=["en"], settings=_settings(today)) or []
    searched_from = 0
    for found, _when in finds:
        found_at = query.find(found, searched_from)
        searched_from = max(searched_from, found_at + len(found))
        core = _core(found, today)
        if core is None or found_at < 0:
            continue
        offset, phrase = core
        parsed = _parse(phrase, today)
        if parsed is None:
            continue
        first, last = _span(*parsed)
        start = found_at + offset
        # A preposition just before the phrase goes with it ("in May").
        before = re.search(r"\b(?:in|on|during|from|of)\s+\Z", query[:start], re.I)
        if before:
            start = before.start()
        end = found_at + offset + len(phrase)
        text = _TRIM.sub("", phrase) or phrase
        return DateWindow(first, last, text), _without(query, start, end)
    return None


def _core(found: str, today: dt.date) -> tuple[int, str] | None:
    """The shortest run of words of a find that still names the same date and period, when
    that run is a calendar time ("last week about the" -> "last week"), and where it starts
    in the find."""
    whole = _parse(found, today)
    if whole is None:
        return None
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", found)]
    for size in range(1, len(words) + 1):
        for first in range(len(words) - size + 1):
            begin, end = words[first][0], words[first + size - 1][1]
            phrase = found[begin:end]
            if _is_calendar(phrase) and _parse(phrase, today) == whole:
                return begin, phrase
    return None


def _is_calendar(phrase: str) -> bool:
    return bool(_CALENDAR.search(phrase) or _AFTER_PREPOSITION.search(phrase))


def _without(query: str, start: int, end: int) -> str:
    rest = (query[:start] + " " + query[end:]).strip()
    return " ".join(rest.split()) or query


def _span(day: dt.date, period: Period) -> tuple[dt.date, dt.date]:
    if period == "week":
        monday = day - dt.timedelta(days=day.weekday())
        return monday, monday + dt.timedelta(days=6)
    if period == "month":
        last = calendar.monthrange(day.year, day.month)[1]
        return day.replace(day=1), day.replace(day=last)
    if period == "year":
        return dt.date(day.year, 1, 1), dt.date(day.year, 12, 31)
    return day, day


def _parse(text: str, today: dt.date) -> tuple[dt.date, Period] | None:
    data = _parser(today).get_date_data(text)
    if data.date_obj is None:
        return None
    period = data.period if data.period in ("day", "week", "month", "year") else "day"
    return data.date_obj.date(), period


@cache
def _parser(today: dt.date) -> DateDataParser:
    _load_dateparser()
    from dateparser.date import DateDataParser

    return DateDataParser(languages=["en"], settings=_settings(today))


def _settings(today: dt.date) -> dict[str, object]:
    return {
        # Noon: "N days ago" lands on the intended day whatever the time zone.
        "RELATIVE_BASE": dt.datetime.combine(today, dt.time(12)),
        "PREFER_DATES_FROM": "past",  # memory is about what happened
        "RETURN_AS_TIMEZONE_AWARE": False,
    }
