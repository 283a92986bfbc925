"""A search hit as JSON: the fields the CLI's `--json` and the MCP answers share, built once."""

from __future__ import annotations

from typing import Any, Literal

from apus.config_model import camel
from apus.search.results import SearchHit


def from_partial_vectors(hit: SearchHit, coverage: float | None) -> bool:
    """Whether search by meaning found `hit` while it covered only part of the passages
    (`coverage`, the answer's): a closer passage by meaning may not have its vector yet.
    Every face marks such a hit by this one rule."""
    return coverage is not None and "vector" in hit.legs


def hit_json(
    hit: SearchHit, *, case: Literal["snake", "camel"], coverage: float | None = None
) -> dict[str, Any]:
    """Where the passage is, its score and text, and what it is made of; `partial_vectors`
    (only while `coverage`, the answer's, says the vectors are still being built) when
    search by meaning found it among them. Each face keeps its own spelling: snake_case for
    scripts (`--json`), camelCase for agents (MCP)."""
    fields: dict[str, Any] = {
        "path": hit.path,
        "start_line": hit.start_line,
        "end_line": hit.end_line,
        "score": hit.score,
        "snippet": hit.snippet,
        "source": hit.source,
        "citation": hit.citation,
        "media": None
        if hit.media is None
        else {"type": hit.media.mime_type, "bytes": hit.media.size},
    }
    if from_partial_vectors(hit, coverage):
        fields["partial_vectors"] = True
    return fields if case == "snake" else {camel(key): value for key, value in fields.items()}
