"""Exact search and history over indexed transcripts, within what the asker may see.

Nothing is returned while transcripts are off, and nothing outside the asker's visibility
(`tools.sessions.visibility`) is read: the visibility is part of the SQL that finds rows, so a
hidden transcript is never matched, counted or excerpted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from apus.config import Settings
from apus.errors import ApusError
from apus.index.note_filter import Asker, NoteFilter, SessionScope
from apus.index.store import Store

# The transcript tables are read only by the functions that search or page them: every note
# search scopes its filter here (`scoped_filter`), and need not load them.
if TYPE_CHECKING:
    from apus.index.transcript_store import StoredMessage, TranscriptInfo

DEFAULT_HISTORY = 50
_ENABLE_FIX = (
    'set memory.search.experimental.sessionMemory = true and add "sessions" to '
    "memory.search.sources in config.toml, then run `apus memory index`"
)
# A query's words and "quoted phrases" (a quote left open runs to the end).
_QUERY_PARTS = re.compile(r'"([^"]*)"?|([^\s"]+)')


class TranscriptsOffError(ApusError):
    """Transcripts were asked for while they are not indexed."""


class SessionNotFoundError(ApusError):
    """No visible indexed session has that key."""


@dataclass(frozen=True)
class TranscriptMatch:
    session_key: str
    timestamp: str
    role: str
    excerpt: str
    line: int  # the message's line in the transcript file


@dataclass(frozen=True)
class ConversationWindow:
    """Consecutive messages of a session's active branch."""

    info: TranscriptInfo
    first: int  # position of messages[0] on the branch, from 0
    messages: list[StoredMessage]

    @property
    def more_before(self) -> bool:
        return self.first > 0

    @property
    def more_after(self) -> bool:
        return self.first + len(self.messages) < self.info.messages


def check_enabled(settings: Settings) -> None:
    from apus.vault import transcripts as tx

    if not tx.enabled(settings.search):
        raise TranscriptsOffError("Session transcripts are not indexed.", fix=_ENABLE_FIX)


def scoped_filter(settings: Settings, filters: NoteFilter) -> NoteFilter:
    """The filter a search really runs with: without transcripts while they are off, and with
    the configured visibility (from settings, never from the caller) for the asker it names."""
    if "sessions" not in filters.sources:
        return filters
    # Reading transcripts is imported only by a search that may return them.
    from apus.vault import transcripts as tx

    if not tx.enabled(settings.search):
        kept = tuple(source for source in filters.sources if source != "sessions")
        if not kept:  # an empty answer would read as "nothing found", not "not searched"
            raise TranscriptsOffError(
                "Session transcripts are not indexed, so there are none to search.",
                fix=_ENABLE_FIX,
            )
        return replace(filters, sources=kept)
    visibility = settings.tools.sessions.visibility
    return replace(filters, scope=SessionScope.of(visibility, filters.scope.asker))


def fts_query(text: str) -> str:
    """An FTS5 query for every word and "quoted phrase" of `text`, all required. Each part is
    quoted, so FTS5 operators and punctuation in it are only text."""
    parts = []
    for phrase, word in _QUERY_PARTS.findall(text):
        part = (phrase or word).strip()
        if part:
            parts.append('"' + part.replace('"', '""') + '"')
    if not parts:
        raise ApusError("There is nothing to search for.", fix="give words or a quoted phrase")
    return " ".join(parts)


def search_transcripts(
    settings: Settings, store: Store | None, query: str, asker: Asker, limit: int
) -> list[TranscriptMatch]:
    from apus.index.transcript_store import TranscriptStore

    check_enabled(settings)
    scope = SessionScope.of(settings.tools.sessions.visibility, asker)
    match = fts_query(query)
    if store is None or not store.has_transcripts():
        return []
    return [
        TranscriptMatch(hit.session_key, hit.timestamp, hit.role, hit.excerpt, hit.line)
        for hit in TranscriptStore(store).search(match, scope, limit)
    ]


def transcript_history(
    settings: Settings,
    store: Store | None,
    session_key: str,
    asker: Asker,
    *,
    around: str | None = None,
    line: int = 0,
    limit: int = DEFAULT_HISTORY,
) -> ConversationWindow:
    """`limit` messages of a session: centred on the one nearest `around` (a time) or at
    `line` (of the file) when given, else the latest ones."""
    from apus.index.transcript_store import TranscriptStore

    check_enabled(settings)
    scope = SessionScope.of(settings.tools.sessions.visibility, asker)
    moment = ""
    if around:
        from apus.vault import transcripts as tx

        moment = tx.normalise_timestamp(around)
        if not moment:
            raise ApusError(
                f"`{around}` is not a time.",
                fix="give it as ISO 8601, e.g. 2026-11-20T14:30:00Z or 2026-11-20",
            )
    store, info = _visible(store, session_key, scope)
    transcripts = TranscriptStore(store)
    if moment or line:
        first = transcripts.seq_at(info.file_id, timestamp=moment, line=line) - limit // 2
    else:
        first = info.messages - limit
    first = max(0, min(first, info.messages - limit))
    return ConversationWindow(info, first, transcripts.messages(info.file_id, first, limit))


def _visible(
    store: Store | None, session_key: str, scope: SessionScope
) -> tuple[Store, TranscriptInfo]:
    """The store and the session, when it is indexed and `scope` sees it; one error for
    both "not there" and "not yours", so that a hidden session's existence is not told."""
    from apus.index.transcript_store import TranscriptStore

    info = None
    if store is not None and store.has_transcripts():
        info = TranscriptStore(store).find(session_key, scope)
    if store is None or info is None:
        raise SessionNotFoundError(
            f"No indexed session {session_key} is visible here.",
            fix="use a sessionKey from `apus sessions search` (and `apus memory index` if it "
            "is new)",
        )
    return store, info
