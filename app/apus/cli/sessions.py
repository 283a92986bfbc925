"""`apus sessions search|history`: exact search over agent session transcripts, and the
conversation around a hit (only when transcripts are indexed, and only those visible)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from apus.cli.context import current_source, guarded

if TYPE_CHECKING:
    from apus.memory import Memory
    from apus.memory.transcript_reader import ConversationWindow, TranscriptMatch


@click.group()
def sessions() -> None:
    """Search agent session transcripts word for word and read them (opt-in)."""


def _open() -> Memory:
    from apus.memory import Memory

    return Memory(current_source())


def _asker(agent: str | None, session: str | None) -> Any:
    from apus.index.note_filter import Asker

    return Asker(agent, session)


def _echo(text: str, fg: str | None = None, *, newlines: bool = False) -> None:
    """Transcript text is shown, never obeyed by the terminal."""
    from apus.terminal_text import terminal_safe

    click.secho(terminal_safe(text, keep_newlines=newlines), fg=fg)


_ASKER_OPTIONS = (
    click.option("--agent", metavar="ID", help="The agent asking (for visibility)."),
    click.option("--session", metavar="AGENT/SESSION", help="The session asking (for visibility)."),
)


@sessions.command()
@click.argument("query", nargs=-1, required=True)
@_ASKER_OPTIONS[0]
@_ASKER_OPTIONS[1]
@click.option("-n", "--limit", type=click.IntRange(1, 500), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with `results`.")
@guarded
def search(
    query: tuple[str, ...], agent: str | None, session: str | None, limit: int, as_json: bool
) -> None:
    """Messages holding every word of QUERY ("quoted words" must be adjacent), best match
    first and the newest first among equals. No embeddings: exact words only (case and
    accents aside)."""
    with _open() as memory:
        found = memory.sessions_search(" ".join(query), asker=_asker(agent, session), limit=limit)
    if as_json:
        click.echo(json.dumps({"results": [match_json(m) for m in found]}, indent=2))
        return
    if not found:
        click.echo("No matches.")
    for match in found:
        where = f"{match.session_key}  {match.timestamp}  {match.role}  line {match.line}"
        _echo(where, "cyan")
        _echo(f"    {match.excerpt}")


def match_json(match: TranscriptMatch) -> dict[str, Any]:
    return {
        "sessionKey": match.session_key,
        "timestamp": match.timestamp,
        "role": match.role,
        "excerpt": match.excerpt,
        "line": match.line,
    }


@sessions.command()
@click.argument("key")
@click.option("--around", metavar="TIMESTAMP", help="Centre on the message nearest this time.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@_ASKER_OPTIONS[0]
@_ASKER_OPTIONS[1]
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded
def history(
    key: str,
    around: str | None,
    limit: int,
    agent: str | None,
    session: str | None,
    as_json: bool,
) -> None:
    """The messages of session KEY (AGENT/SESSION) on its active branch: around a time, or
    the latest ones."""
    with _open() as memory:
        window = memory.sessions_history(
            key, asker=_asker(agent, session), around=around, limit=limit
        )
    if as_json:
        click.echo(json.dumps(window_json(window), indent=2))
        return
    if window.more_before:
        _echo(f"… {window.first} earlier message(s)", "yellow")
    for message in window.messages:
        _echo(f"{message.role}  {message.timestamp}  (line {message.line})", "cyan")
        _echo(message.text, newlines=True)
        click.echo()
    if window.more_after:
        _echo("… later messages follow (--around a later time)", "yellow")


def window_json(window: ConversationWindow) -> dict[str, Any]:
    info = window.info
    return {
        "sessionKey": info.session_key,
        "agentId": info.agent,
        "parentSession": info.parent_key,
        "started": info.started,
        "lastActivity": info.last_activity,
        "total": info.messages,
        "from": window.first,
        "moreBefore": window.more_before,
        "moreAfter": window.more_after,
        "messages": [
            {"timestamp": m.timestamp, "role": m.role, "text": m.text, "line": m.line}
            for m in window.messages
        ],
    }
