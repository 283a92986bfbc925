"""A search hit as JSON: the fields the CLI's `--json` and the MCP answers share, built once."""

from __future__ import annotations

from typing import Any, Literal

from pydantic.alias_generators import to_camel

from apus.search.engine import SearchHit


def hit_json(hit: SearchHit, *, case: Literal["snake", "camel"]) -> dict[str, Any]:
    """Where the passage is, its score and text, and what it is made of. Each face keeps
    its own spelling: snake_case for scripts (`--json`), camelCase for agents (MCP)."""
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
    return fields if case == "snake" else {to_camel(key): value for key, value in fields.items()}
