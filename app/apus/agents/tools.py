"""The agent tools over one vault's session: search, get, related, recall, status, and exact
search and history over agent session transcripts.

Each tool parses its arguments, calls the session, and shapes the typed result; it never
prints (stdout carries the protocol). A failure the agent can act on is a ToolError whose
text ends with the fix.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from apus.agents.answers import (
    Fallback,
    HistoryMessage,
    NoteWindow,
    Passage,
    RecallAnswer,
    RecallTrigger,
    SearchAnswer,
    SessionHistoryAnswer,
    SessionsSearchAnswer,
    TimeWindow,
    TranscriptMatchAnswer,
    WriteAnswer,
)
from apus.agents.compact import MIN_MAX_CHARS, SNIPPET_COLUMNS, fit, render_text, structured
from apus.agents.indexing import IndexingWatch
from apus.agents.tool_errors import CRASH_FIX, one_form
from apus.embed.base import redact
from apus.errors import ApusError, ProviderUnavailableError
from apus.index.note_filter import (
    CORPUS_SOURCES,
    Asker,
    NoteFilter,
    SessionScope,
    normalise_prefix,
)
from apus.memory import Memory
from apus.memory.hit_json import hit_json
from apus.memory.writer import Entry, Target
from apus.search.options import SearchOptions
from apus.search.per_note import DEFAULT_PER_NOTE
from apus.search.ranking import readable_score
from apus.search.results import SearchHit, SearchResponse
from apus.search.snippet import Snippet, within_columns
from apus.search.time_words import TimeWordsError, bound
from apus.vault.transcripts import session_key_of

# The most passages one answer holds (maxResults above it is clamped, and said so).
MAX_RESULTS = 200

Corpus = Literal["memory", "sessions", "all"]
AgentArg = Annotated[
    str | None, Field(description="The agent asking (what transcripts it may see)")
]
SessionArg = Annotated[
    str | None, Field(description="The session asking, AGENT/SESSION (what transcripts it may see)")
]


PerNoteArg = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_RESULTS,
        description="At most this many passages of one note (touching ones merged)",
    ),
]
MaxCharsArg = Annotated[
    int | None,
    Field(
        ge=MIN_MAX_CHARS,
        description="A size budget for the whole answer, in characters: snippets are "
        "cut to fit, the lowest passages left out if need be",
    ),
]
SinceArg = Annotated[
    str | None,
    Field(
        description="Only notes dated on or after this: YYYY-MM-DD, a timestamp, 7d, "
        "2w, yesterday, last week, last month (without since/until, a time in the "
        "query itself is read: 'what did I decide last week')"
    ),
]
UntilArg = Annotated[str | None, Field(description="Only notes dated on or before this (as since)")]


class AgentTools:
    """The tool functions; the server registers each bound method under its own name.

    A tool returns its CallToolResult (structured answer and text form) itself; the model in
    `Annotated[CallToolResult, Model]` is what the SDK publishes and checks it against.
    """

    def __init__(self, memory: Memory, today: Callable[[], dt.date] = dt.date.today) -> None:
        self.memory = memory
        self.today = today  # what "last week" counts from
        self.indexing = IndexingWatch(memory)

    def memory_search(
        self,
        query: Annotated[str, Field(description="What to look for, in words or a phrase")],
        maxResults: Annotated[
            int | None,
            Field(ge=1, description=f"How many passages (at most {MAX_RESULTS}; more is clamped)"),
        ] = None,
        minScore: Annotated[
            float | None,
            Field(ge=0, le=1, description="Prefer passages whose relevance reaches this"),
        ] = None,
        perNote: PerNoteArg = DEFAULT_PER_NOTE,
        maxChars: MaxCharsArg = None,
        corpus: Annotated[
            Corpus, Field(description='"memory" (notes), "sessions" (transcripts) or "all"')
        ] = "memory",
        paths: Annotated[
            list[str] | None, Field(description="Only notes under these path prefixes")
        ] = None,
        since: SinceArg = None,
        until: UntilArg = None,
        tags: Annotated[
            list[str] | None, Field(description="Only notes whose frontmatter has all these tags")
        ] = None,
        agent: AgentArg = None,
        session: SessionArg = None,
    ) -> Annotated[CallToolResult, SearchAnswer]:
        """Search the memory notes by meaning and by exact words at once.

        Returns passages best first, each with `citation` (path#Lstart-Lend); read more of a
        note with memory_get. Filters narrow the search before ranking. With corpus
        "sessions" or "all", indexed agent transcripts the asker may see are searched too
        (their hits have source "sessions"; read them with sessions_history)."""
        given = _given_window(since, until, self.today())
        filters = NoteFilter(
            path_prefixes=tuple(normalise_prefix(p) for p in paths or ()),
            since=None if given is None else given.since,
            until=None if given is None else given.until,
            tags=tuple(tags or ()),
            sources=CORPUS_SOURCES[corpus],
            scope=SessionScope(asker=Asker(agent, session)),
        )
        limit, notices = _clamped(maxResults, self.memory.settings.search.query.max_results)
        options = SearchOptions(
            limit=limit, min_score=minScore, filters=filters, per_note=perNote, time_words=True
        )
        try:
            response = self.memory.search(query, options)
        except ProviderUnavailableError as exc:
            return _search_reply(_unavailable(exc), maxChars)
        except ApusError as exc:
            raise _tool_error(exc) from exc
        keyword = response.legs.get("keyword")
        if keyword is not None and keyword.ran and keyword.fix:
            notices.append(f"{keyword.reason} (fix: {keyword.fix})")
        window = given or _read_window(response)
        if response.widened and window is not None:
            notices.append(f"nothing dated {window.describe()}; these are from any date")
        answer = self._answer(response)
        answer.timeWindow = None if window is None else window.answer()
        rerank = response.legs.get("rerank")
        if rerank is not None and not rerank.ran:
            fix = f" Fix: {rerank.fix}" if rerank.fix else ""
            notices.append(f"reranking did not run (the fused order stands): {rerank.reason}.{fix}")
        answer.notices = notices or None
        return _search_reply(answer, maxChars)

    def memory_get(
        self,
        path: Annotated[
            str,
            Field(
                description="A note's path or a result's citation (path#L12-L30, path#L12), "
                "as a search result gives it"
            ),
        ],
        from_: Annotated[
            int, Field(validation_alias="from", ge=1, description="First line, 1-based")
        ] = 1,
        lines: Annotated[int, Field(ge=1, le=2000, description="How many lines")] = 200,
    ) -> Annotated[CallToolResult, NoteWindow]:
        """Read lines of an indexed note. A citation (path#L12-L30) reads just those lines;
        path#L12 reads a page from line 12. Long notes come in pages: when `truncated`,
        call again with the plain path and from=nextFrom."""
        key = session_key_of(path.split("#", 1)[0])
        if key is not None:
            raise ToolError(
                f"{path} is a session transcript, not a note. Fix: call sessions_history "
                f"with sessionKey={key!r}."
            )
        try:
            window = self.memory.get(path, from_, lines)
        except ApusError as exc:
            raise _tool_error(exc) from exc
        answer = NoteWindow(
            path=window.path,
            text=window.text,
            from_=window.start,
            lines=window.lines,
            totalLines=window.total_lines,
            truncated=window.truncated,
            nextFrom=window.next_start,
        )
        hint = (
            f"\n[more content: call memory_get again with path={window.path!r} "
            f"from={window.next_start}]"
            if window.truncated
            else ""
        )
        return _reply(answer, text=window.text + hint)

    def memory_related(
        self,
        path: Annotated[str, Field(description="A note's path, as a search result gives it")],
        maxResults: Annotated[
            int, Field(ge=1, description=f"How many notes (at most {MAX_RESULTS}; more is clamped)")
        ] = 10,
    ) -> Annotated[CallToolResult, SearchAnswer]:
        """Notes most related to a given note (the note itself excluded), one passage each:
        by the note's own vectors when embeddings are ready, else by its title and
        headings."""
        limit, notices = _clamped(maxResults, maxResults)
        try:
            response = self.memory.related(path, limit)
        except ApusError as exc:
            raise _tool_error(exc) from exc
        answer = self._answer(response)
        if notices:
            answer.notices = notices
        return _search_reply(answer, None)

    def memory_recall(
        self, message: Annotated[str, Field(description="The user's message, as written")]
    ) -> Annotated[CallToolResult, RecallAnswer]:
        """Entries of MEMORY.md and USER.md whose trigger phrases strongly match a message
        (at most 3; usually none). Cheap: at most one query embedding."""
        try:
            entries = self.memory.recall(message)
        except ApusError as exc:
            raise _tool_error(exc) from exc
        answer = RecallAnswer(
            entries=[
                RecallTrigger(
                    path=e.path,
                    trigger=e.trigger,
                    score=e.score,
                    startLine=e.start_line,
                    endLine=e.end_line,
                    snippet=e.snippet,
                    citation=f"{e.path}#L{e.start_line}-L{e.end_line}",
                )
                for e in entries
            ]
        )
        lines = [
            f"{e.citation}  {e.score:.3f}  trigger {e.trigger!r}: {e.snippet}"
            for e in answer.entries
        ]
        text = "\n".join(lines) if lines else "No entry's trigger matches this message."
        return _reply(answer, text=text)

    def memory_write(
        self,
        text: Annotated[
            str, Field(description="What to remember: one fact, decision or preference")
        ],
        target: Annotated[
            Target,
            Field(
                description='"daily" (today\'s note, memory/YYYY-MM-DD.md), or for durable '
                'facts "MEMORY.md" (about the work) / "USER.md" (about the user)'
            ),
        ] = "daily",
        importance: Annotated[
            int | None,
            Field(ge=1, le=10, description="How much it matters, 1 (minor) to 10 (essential)"),
        ] = None,
        triggers: Annotated[
            list[str] | None,
            Field(
                description="Phrases a user would say when this entry should be recalled "
                "(memory_recall reads them in MEMORY.md and USER.md)"
            ),
        ] = None,
    ) -> Annotated[CallToolResult, WriteAnswer]:
        """Append one entry to the user's memory notes (never changes what is there). It is
        indexed before this returns: the next memory_search finds it."""
        entry = Entry(
            text=text, target=target, importance=importance, triggers=tuple(triggers or ())
        )
        try:
            written = self.memory.write(entry, self.now())
        except ApusError as exc:
            raise _tool_error(exc) from exc
        place = written.entry
        answer = WriteAnswer(
            path=place.path,
            startLine=place.start_line,
            endLine=place.end_line,
            citation=place.citation,
            created=place.created,
            indexed=written.indexed,
            notices=list(written.notices) or None,
        )
        text_form = f"Written to {place.citation}; {written.searchable}"
        text_form += "".join(f"\nNote: {notice}." for notice in written.notices)
        return _reply(answer, text=text_form)

    def now(self) -> dt.datetime:
        """Today (as `today` says) at the local time of day."""
        return dt.datetime.combine(self.today(), dt.datetime.now().time())

    def memory_status(self) -> dict[str, Any]:
        """What is indexed, what was skipped and why, and whether search by meaning works
        (the object `apus memory status --json` prints, with `keywordIndex`: whether keyword
        search covers every stored note, `watching`: whether edits on disk reach the index by
        themselves from now on, and `indexing` while notes are still being read)."""
        status = self.memory.status().as_dict()
        # `watching` is this server's own: a one-shot `status --json` watches nothing.
        status["watching"] = self.memory.watch_live
        # Files in the store are not yet files keyword search finds: say both.
        ready, reason = self.memory.searcher().keyword_ready()
        indexing = self.indexing.current()
        if self.indexing.building():
            # Not a command to run: this server is building it now, and says how far.
            ready, reason = (
                False,
                "being built by this server"
                + (f" ({indexing.describe()})" if indexing is not None else ""),
            )
            status["keyword"] = reason
            _embedded_later(status["embeddings"])
        status["keywordIndex"] = {"ready": ready, **({"reason": reason} if reason else {})}
        if indexing is not None:
            status["indexing"] = indexing.model_dump(exclude_none=True)
        return status

    def sessions_search(
        self,
        query: Annotated[
            str, Field(description='Words that must all appear; "quoted words" adjacent')
        ],
        agent: AgentArg = None,
        session: SessionArg = None,
        maxResults: Annotated[int, Field(ge=1, le=500, description="How many messages")] = 10,
    ) -> Annotated[CallToolResult, SessionsSearchAnswer]:
        """Exact search over earlier conversations (agent session transcripts, when the user
        has them indexed): the messages holding every word, best match first and newest first
        among equals. Open one with sessions_history(sessionKey, around=timestamp)."""
        asker = Asker(agent, session)
        try:
            found = self.memory.sessions_search(query, asker=asker, limit=maxResults)
        except ApusError as exc:
            raise _tool_error(exc) from exc
        answer = SessionsSearchAnswer(
            results=[
                TranscriptMatchAnswer(
                    sessionKey=m.session_key,
                    timestamp=m.timestamp,
                    role=m.role,
                    excerpt=m.excerpt,
                    line=m.line,
                )
                for m in found
            ]
        )
        return _reply(answer)

    def sessions_history(
        self,
        sessionKey: Annotated[str, Field(description="AGENT/SESSION, as sessions_search gives")],
        around: Annotated[
            str | None, Field(description="Centre on the message nearest this ISO 8601 time")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="How many messages")] = 50,
        agent: AgentArg = None,
        session: SessionArg = None,
    ) -> Annotated[CallToolResult, SessionHistoryAnswer]:
        """The messages of one earlier conversation (its active branch): around a time when
        `around` is given, else the latest ones. User and assistant text only."""
        try:
            window = self.memory.sessions_history(
                sessionKey, asker=Asker(agent, session), around=around, limit=limit
            )
        except ApusError as exc:
            raise _tool_error(exc) from exc
        info = window.info
        answer = SessionHistoryAnswer(
            sessionKey=info.session_key,
            agentId=info.agent,
            parentSession=info.parent_key,
            started=info.started,
            lastActivity=info.last_activity,
            total=info.messages,
            from_=window.first,
            moreBefore=window.more_before,
            moreAfter=window.more_after,
            messages=[
                HistoryMessage(timestamp=m.timestamp, role=m.role, text=m.text, line=m.line)
                for m in window.messages
            ],
        )
        return _reply(answer)

    # -- shaping ----------------------------------------------------------------------------

    def _answer(self, response: SearchResponse) -> SearchAnswer:
        memory = self.memory
        vector = response.legs.get("vector")
        provider = memory.provider
        fallback = None
        if vector is not None and not vector.ran and provider.state != "off":
            fallback = Fallback(reason=vector.reason, fix=vector.fix)
        debug: dict[str, Any] = {}
        if provider.state in ("keyword-only", "unavailable"):
            debug["embeddingBootstrap"] = redact(provider.reason)
        rerank = response.legs.get("rerank")
        if rerank is not None:  # the second stage: what it did, its score of each passage
            debug["rerank"] = {
                **{key: getattr(rerank, key) for key in ("ran", "reason", "fix", "candidates")},
                "ms": round(rerank.ms, 1),
                "scores": [hit.explain.rerank for hit in response.hits],
            }
        return SearchAnswer(
            indexing=self.indexing.current(),
            results=[_passage(hit, response.coverage) for hit in response.hits],
            provider=memory.settings.search.provider,
            model=_model_name(memory),
            mode=response.ran,
            fallback=fallback,
            coverage=None if response.coverage is None else round(response.coverage, 4),
            debug=debug,
        )


def _passage(hit: SearchHit, coverage: float | None) -> Passage:
    fields = hit_json(hit, case="camel", coverage=coverage)
    # The citation holds the lines; an answer is read by a model, and every byte is its.
    del fields["startLine"], fields["endLine"]
    fields["snippet"] = within_columns(Snippet(hit.snippet, hit.highlights), SNIPPET_COLUMNS).text
    return Passage(
        **fields,
        relevance=readable_score(hit.explain.merged),
        weak=True if hit.weak else None,
    )


def _embedded_later(embeddings: dict[str, Any]) -> None:
    """While this server builds the index, vectors a provider can make are not missing for
    the user to fix: they are made once the notes are read."""
    if embeddings.get("state") == "keyword-only" and "identity" in embeddings:
        embeddings["reason"] = (
            "this server embeds the passages once the notes are read; search by meaning "
            "starts with the first ones"
        )
        embeddings.pop("fix", None)


def _model_name(memory: Memory) -> str | None:
    embedder = memory.provider.embedder
    if embedder is None:
        return None
    model = embedder.describe().get("model")  # what it runs, without asking the provider
    return str(model) if model else memory.settings.search.model or None


def _unavailable(exc: ProviderUnavailableError) -> SearchAnswer:
    return SearchAnswer(
        results=[],
        unavailable=True,
        error=exc.reason,
        action=exc.fix or "check the embedding provider (apus memory status --deep)",
    )


@dataclass(frozen=True)
class _Window:
    since: dt.date | None
    until: dt.date | None
    text: str
    source: Literal["query", "arguments"]

    def answer(self) -> TimeWindow:
        return TimeWindow(
            since=None if self.since is None else self.since.isoformat(),
            until=None if self.until is None else self.until.isoformat(),
            text=self.text,
            source=self.source,
        )

    def describe(self) -> str:
        return self.answer().describe()


def _given_window(since: str | None, until: str | None, today: dt.date) -> _Window | None:
    """The dates `since`/`until` name (the session checks that they leave a day between
    them; without them it reads a time in the query itself)."""
    given = {name: text for name, text in (("since", since), ("until", until)) if text}
    if not given:
        return None
    first = _bound(since, "since", today, end=False)
    last = _bound(until, "until", today, end=True)
    text = " ".join(f"{name}={value}" for name, value in given.items())
    return _Window(first, last, text, "arguments")


def _read_window(response: SearchResponse) -> _Window | None:
    """The dates the session read from the query's own words, if any."""
    window = response.time_window
    if window is None:
        return None
    return _Window(window.since, window.until, window.text, "query")


def _bound(text: str | None, name: str, today: dt.date, *, end: bool) -> dt.date | None:
    if text is None or not text.strip():
        return None
    try:
        return bound(text, today=today, end=end)
    except TimeWordsError as exc:
        raise ToolError(one_form(f"`{name}` {exc.what}: {text!r}", exc.fix)) from None


def _clamped(asked: int | None, default: int) -> tuple[int, list[str]]:
    """The number of results to give, and a notice when more were asked than the cap."""
    wanted = default if asked is None else asked
    if wanted <= MAX_RESULTS:
        return wanted, []
    return MAX_RESULTS, [f"maxResults {wanted} is above the cap of {MAX_RESULTS}: clamped"]


def _search_reply(answer: SearchAnswer, max_chars: int | None) -> CallToolResult:
    """Compact text (one line per passage) and the full structured answer, both held to
    `max_chars` when given."""
    if max_chars is not None:
        answer = fit(answer, max_chars)
    return CallToolResult(
        content=[TextContent(type="text", text=render_text(answer))],
        structured_content=structured(answer),
    )


def _tool_error(exc: ApusError) -> ToolError:
    return ToolError(one_form(exc.reason, exc.fix or CRASH_FIX))


def _reply(answer: BaseModel, *, text: str | None = None) -> CallToolResult:
    """The structured answer without empty fields, and a text form for clients that only
    read text."""
    data = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    body = text if text is not None else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=data)
