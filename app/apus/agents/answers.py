"""What the agent tools return: camelCase fields, as agents already receive them from
memory tools elsewhere. Each model is also the tool's published output schema."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Answer(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class Passage(_Answer):
    path: str = Field(description="The note, relative to the vault (pass it to memory_get)")
    startLine: int
    endLine: int
    score: float
    snippet: str
    source: str = Field(description='"memory" (notes) or "sessions" (agent transcripts)')
    citation: str = Field(description="path#L<start>-L<end>, for citing the passage")


class Fallback(_Answer):
    reason: str
    fix: str = ""


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
    debug: dict[str, Any] | None = None
    unavailable: bool | None = None
    error: str | None = None
    action: str | None = None


class NoteWindow(_Answer):
    path: str
    text: str
    from_: int = Field(alias="from", description="first line of `text`, 1-based")
    lines: int = Field(description="lines in `text`")
    truncated: bool = Field(description="more lines follow; call again with from=nextFrom")
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
