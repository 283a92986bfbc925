"""What the agent tools return: camelCase fields, as agents already receive them from
memory tools elsewhere. Each model is also the tool's published output schema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from apus.indexing.progress import PHASE_LABELS


class _Answer(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class Media(_Answer):
    type: str = Field(description='MIME type, e.g. "image/png" or "audio/mpeg"')
    bytes: int


class Passage(_Answer):
    path: str = Field(description="The note, relative to the vault (pass it to memory_get)")
    score: float = Field(
        description="what the results are ordered by (never rises down the list): relevance "
        "x recency x importance x curated memory x language, less what a passage above "
        "already says (diversity); a note the query names comes first, with the best score"
    )
    relevance: float = Field(
        description="how well the passage matches, before recency and importance"
    )
    snippet: str = Field(
        description="the passage around the words that matched, at most 150 columns (a CJK "
        "character counts two); memory_get on the citation reads it whole"
    )
    source: str = Field(description='"memory" (notes) or "sessions" (agent transcripts)')
    citation: str = Field(
        description="path#L<start>-L<end>: the passage's lines, for citing it and for memory_get"
    )
    media: Media | None = Field(
        None, description="set when the result is an image or audio file: its type and size"
    )
    weak: bool | None = Field(
        None,
        description="true when only meaning matched, and no closer than passages of notes "
        "that cannot answer the query: likely not an answer",
    )
    partialVectors: bool | None = Field(
        None,
        description="true when search by meaning found it while only part of the passages "
        "had vectors (see the answer's coverage): a closer passage may not be embedded yet",
    )


class Fallback(_Answer):
    reason: str
    fix: str = ""


class TimeWindow(_Answer):
    """The dates a search was held to, and the words they were read from."""

    since: str | None = Field(None, description="first day, YYYY-MM-DD (none: no lower bound)")
    until: str | None = Field(None, description="last day, YYYY-MM-DD (none: no upper bound)")
    text: str = Field(description="the words the window was read from")
    source: str = Field(description='"query" (read from the query) or "arguments" (since/until)')

    def describe(self) -> str:
        if self.since and self.until:
            return self.since if self.since == self.until else f"{self.since} to {self.until}"
        return f"from {self.since}" if self.since else f"up to {self.until}"


class Indexing(_Answer):
    """The index is still being built: results may miss notes not read yet, or (while
    passages are embedded) passages only meaning would find."""

    phase: str = Field(
        description='what the sync is doing: "Starting", "Reading notes", "Building keyword '
        'index", "Embedding passages"'
    )
    done: int
    total: int = Field(description="0 while the number is not known yet")
    eta: float | None = Field(None, description="seconds left, when there is an estimate")

    def describe(self) -> str:
        count = f" {self.done} of {self.total}" if self.total else ""
        left = f", about {self.eta:.0f} s left" if self.eta is not None else ""
        if self.phase == PHASE_LABELS["embed"]:
            meaning = (
                "every note is searchable by its words; search by meaning covers the passages "
                "embedded so far"
            )
        else:
            meaning = "results may miss notes not read yet (ask again when indexing is done)"
        return f"{self.phase}{count}{left}; {meaning}"


class SearchAnswer(_Answer):
    """Passages best first. `unavailable` (with `error` and `action`) when the configured
    embedding provider cannot answer and must not be silently replaced by keywords."""

    results: list[Passage]
    provider: str | None = None
    model: str | None = None
    mode: str | None = Field(None, description="hybrid, keyword or vector: what really ran")
    fallback: Fallback | None = Field(
        None, description="why search by meaning did not run, and what fixes it"
    )
    timeWindow: TimeWindow | None = Field(
        None, description="the dates results were held to, and what they were read from"
    )
    indexing: Indexing | None = Field(
        None,
        description="set while the index is being built (from the server's start, until it "
        "covers the vault): what is being done, and how far",
    )
    coverage: float | None = Field(
        default=None,
        description="set while embeddings are being built: the share of passages search by "
        "meaning covered (the rest were found by their words only)",
    )
    notices: list[str] | None = Field(
        None, description="what was changed in the request (a clamped maxResults, a trimmed answer)"
    )
    debug: dict[str, Any] | None = None
    unavailable: bool | None = None
    error: str | None = None
    action: str | None = None


class NoteWindow(_Answer):
    path: str
    text: str
    from_: int = Field(alias="from", description="first line of `text`, 1-based")
    lines: int = Field(description="lines in `text`")
    totalLines: int = Field(description="lines in the whole note")
    truncated: bool = Field(
        description="what was asked for goes on past `text` (the note, for a plain path; the "
        "citation's range, for path#L12-L30): call again with from=nextFrom. A citation "
        "read whole is not truncated; totalLines says how far the note goes on"
    )
    nextFrom: int | None = None


class RecallTrigger(_Answer):
    path: str
    trigger: str
    score: float
    startLine: int
    endLine: int
    snippet: str
    citation: str


class RecallAnswer(_Answer):
    entries: list[RecallTrigger]


class TranscriptMatchAnswer(_Answer):
    sessionKey: str = Field(description="AGENT/SESSION: pass it to sessions_history")
    timestamp: str = Field(description="when the message was written (ISO 8601, UTC)")
    role: str = Field(description='"user" or "assistant"')
    excerpt: str
    line: int = Field(description="the message's line in the transcript file")


class SessionsSearchAnswer(_Answer):
    """Messages holding every word and phrase, best match first, newest first among equals."""

    results: list[TranscriptMatchAnswer]


class HistoryMessage(_Answer):
    timestamp: str
    role: str
    text: str
    line: int


class SessionHistoryAnswer(_Answer):
    sessionKey: str
    agentId: str
    parentSession: str | None = Field(None, description="the session this one was spawned from")
    started: str
    lastActivity: str
    total: int = Field(description="messages on the session's active branch")
    from_: int = Field(alias="from", description="position of the first message shown, from 0")
    moreBefore: bool
    moreAfter: bool
    messages: list[HistoryMessage]


class WriteAnswer(_Answer):
    path: str = Field(description="the note the entry was appended to")
    startLine: int
    endLine: int
    citation: str = Field(description="path#L<start>-L<end> of the entry (pass it to memory_get)")
    created: bool = Field(description="the daily note did not exist before this entry")
    indexed: bool = Field(
        description="the entry is searchable now (false: another process is indexing; it will be)"
    )
    notices: list[str] | None = Field(
        None, description="what to know about where the entry went (e.g. triggers not recalled)"
    )
