"""`apus memory index|search|get|related|status|recall`: the shell and script interface."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from apus.cli.context import current_source, guarded

if TYPE_CHECKING:
    from apus.cli.search_context import SearchContext
    from apus.config import Settings
    from apus.index.note_filter import NoteFilter
    from apus.indexing.sync import SyncReport
    from apus.memory import Memory
    from apus.memory.writer import Target
    from apus.search.options import Mode
    from apus.search.results import SearchHit, SearchResponse

_OPENBLAS_THREADS = "OPENBLAS_NUM_THREADS"
# `memory index` exit status when the notes were indexed but embeddings the settings ask for
# could not be made (failed mid-run, provider unavailable, or paused by a model change).
EXIT_EMBEDDINGS_INCOMPLETE = 3


@click.group()
def memory() -> None:
    """Index and search the notes folder."""


def _open() -> Memory:
    from apus.memory import Memory

    return Memory(current_source())


def _numpy_on_one_thread() -> None:
    """Load numpy with one OpenBLAS thread, for a command that answers once and makes no
    matrix product. OpenBLAS starts a thread per core as it loads, which wait for work by
    spinning: numpy's import took 135 ms of wall time instead of 69 on a busy 2-core machine.
    The variable is put back at once, so what starts later (FAISS, the embedding server)
    gets the usual threads."""
    if "numpy" in sys.modules:
        return
    saved = os.environ.get(_OPENBLAS_THREADS)
    os.environ[_OPENBLAS_THREADS] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        if saved is None:
            del os.environ[_OPENBLAS_THREADS]
        else:
            os.environ[_OPENBLAS_THREADS] = saved


def _json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@memory.command()
@click.option("--force", is_flag=True, help="Re-read every file and rebuild all indexes.")
@click.option("--reembed", is_flag=True, help="Embed every chunk again, ignoring cached vectors.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON, no progress bar.")
# Set by the index another command starts in the background: only a run a person asked for
# starts an embedding server that crashed again and again.
@click.option("--detached", is_flag=True, hidden=True)
@guarded
def index(force: bool, reembed: bool, as_json: bool, detached: bool) -> None:
    """Build or update the index (only changed files are read again).

    Ctrl-C stops cleanly; what was done is kept and the next run continues from there (a
    --force builds a new index beside the old one, which serves until the new one is ready:
    stopped early, it keeps only the vectors it made).
    Exit status: 0 done, 1 error, 3 notes indexed but embeddings incomplete (the reason is
    printed, and is in `embedding` with --json), 130 stopped.

    A local embedding server that crashed three times in a row is not restarted by the app or
    the agent server; this command tries it again.
    """
    from apus.cli.progress import SyncProgressBar
    from apus.indexing.request import SyncRequest

    cancel = threading.Event()
    previous = signal.getsignal(signal.SIGINT)

    def on_interrupt(_signum: int, _frame: FrameType | None) -> None:
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        with _open() as session, SyncProgressBar(enabled=not as_json) as bar:
            if not detached:
                session.retry_provider()
            report = session.sync(SyncRequest(force, reembed), cancel=cancel, progress=bar.update)
            settings = session.settings
    finally:
        signal.signal(signal.SIGINT, previous)
    if as_json:
        _json(report.as_json())
    else:
        _print_index_report(settings, report)
    if report.cancelled:  # a script must not mistake a stopped run for a complete one
        raise SystemExit(130)
    if _embeddings_incomplete(settings, report):
        raise SystemExit(EXIT_EMBEDDINGS_INCOMPLETE)


def _embeddings_incomplete(settings: Settings, report: SyncReport) -> bool:
    """Embeddings were asked for and are not all there. `auto` without a usable model is
    keyword-only by design, so that alone does not count."""
    outcome = report.embedding
    if outcome.ok:
        return False
    return not (outcome.state == "unavailable" and settings.search.provider == "auto")


def _print_index_report(settings: Settings, report: SyncReport) -> None:
    say = _safe_echo
    if report.store_set_aside is not None:
        moved = report.store_set_aside
        say(
            f"The index database was damaged ({moved.reason}); it was moved to "
            f"{moved.moved_to} and rebuilt from your notes.",
            fg="yellow",
        )
    if report.cancelled:
        say("Stopped. Work done so far is saved; run the same command to continue.")
        return
    say(
        f"Indexed {settings.vault_path()}: {report.files} notes, {report.chunks} chunks "
        f"({report.added} new, {report.changed} changed, {report.renamed} renamed, "
        f"{report.removed} removed) in {report.seconds:.1f}s."
    )
    sessions = report.sessions
    if sessions.enabled:
        say(
            f"Transcripts: {sessions.files} ({sessions.added} new, {sessions.appended} grown, "
            f"{sessions.reread} read again, {sessions.removed} removed), "
            f"{sessions.messages} new messages."
        )
    elif sessions.removed:
        say(f"Removed {sessions.removed} transcript(s): session memory is off.")
    if report.embedded:
        say(f"Embedded {report.embedded} chunks.")
    if report.embedding.vectors_rebuilt:
        say(f"Rebuilt the vector index from the store: {report.embedding.vectors_rebuilt}.")
    stopped = report.embedding.problem
    if stopped is not None:
        say(f"Embeddings: {stopped.reason}", fg="yellow")
        if stopped.fix:
            say(f"Fix: {stopped.fix}")
    if report.skipped:
        say(f"Skipped {len(report.skipped)} file(s):")
        for item in report.skipped[:20]:
            say(f"  {item.rel_path}: {item.reason}")
        if len(report.skipped) > 20:
            say("  … see `apus memory status` for the full list")
    indexed_with_problems = [problem for problem in report.problems if problem.indexed]
    if indexed_with_problems:
        say(f"Indexed {len(indexed_with_problems)} note(s) without a bad part:", fg="yellow")
        for problem in indexed_with_problems[:20]:
            say(f"  {problem.path}: {problem.reason}")
        say(f"Fix: {indexed_with_problems[0].fix}")


def _safe_echo(text: str, fg: str | None = None) -> None:
    """Paths, titles and reasons come from notes: never let them steer the terminal."""
    from apus.terminal_text import terminal_safe

    click.secho(terminal_safe(text), fg=fg)


def _safe_echo_err(text: str) -> None:
    from apus.terminal_text import terminal_safe

    click.secho(terminal_safe(text), fg="yellow", err=True)


class _Day(click.ParamType[dt.date]):
    """A day in the forms agents and people write (`2026-11-20`, `7d`, `last week`): the
    first day of what it names for --since, the last for --until."""

    name = "date"

    def __init__(self, *, end: bool) -> None:
        self.end = end

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> dt.date:
        if isinstance(value, dt.date):
            return value
        from apus.search.time_words import TimeWordsError, bound, today

        try:
            return bound(str(value), today=today(), end=self.end)
        except TimeWordsError as exc:
            self.fail(f"{value!r} {exc.what}; {exc.fix}", param, ctx)


_SINCE = _Day(end=False)
_UNTIL = _Day(end=True)


def filter_options(command: Callable[..., None]) -> Callable[..., None]:
    """--path, --since, --until, --tag: which notes a search may return."""
    for option in reversed(
        [
            click.option(
                "--path",
                "paths",
                multiple=True,
                metavar="PREFIX",
                help="Only notes whose vault-relative path starts with PREFIX (repeatable).",
            ),
            click.option(
                "--since",
                type=_SINCE,
                metavar="DATE",
                help="Only notes dated on or after this day (file name, else frontmatter "
                "`date`, else last modified): YYYY-MM-DD, 7d, 2w, yesterday, last week, "
                "last month.",
            ),
            click.option("--until", type=_UNTIL, metavar="DATE", help="… on or before."),
            click.option(
                "--tag",
                "tags",
                multiple=True,
                help="Only notes whose frontmatter `tags` include TAG (repeatable: all of them).",
            ),
        ]
    ):
        command = option(command)
    return command


def _filters(
    paths: tuple[str, ...],
    since: dt.date | None,
    until: dt.date | None,
    tags: tuple[str, ...],
) -> NoteFilter:
    from apus.index.note_filter import NoteFilter, normalise_prefix

    return NoteFilter(
        path_prefixes=tuple(normalise_prefix(p) for p in paths),
        since=since,
        until=until,
        tags=tags,
    )


@memory.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-n", "--limit", type=click.IntRange(1, 200), help="How many results (default 10).")
@click.option(
    "--mode",
    type=click.Choice(["hybrid", "keyword", "vector"]),
    default="hybrid",
    show_default=True,
    help="Which legs to run.",
)
@filter_options
@click.option(
    "--corpus",
    type=click.Choice(["memory", "sessions", "all"]),
    default="memory",
    show_default=True,
    help="Notes, agent session transcripts (when indexed), or both.",
)
@click.option("--agent", metavar="ID", help="The agent asking (transcript visibility).")
@click.option(
    "--session", metavar="AGENT/SESSION", help="The session asking (transcript visibility)."
)
@click.option(
    "--per-note",
    type=click.IntRange(1, 200),
    metavar="N",
    help="At most N passages of one note (touching ones merged into one).",
)
@click.option(
    "--time-words/--no-time-words",
    default=True,
    show_default=True,
    help="Read a time in the query ('what did I decide last week') as dates, when no "
    "--since/--until is given.",
)
@click.option(
    "--rerank/--no-rerank",
    default=None,
    help="Rerank the top candidates with the reranking model (default: "
    "memory.search.rerank.enabled).",
)
@click.option("--explain", is_flag=True, help="Show how each score was made.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with `results`.")
@guarded
def search(
    query: tuple[str, ...],
    limit: int | None,
    mode: Mode,  # one of click.Choice's
    paths: tuple[str, ...],
    since: dt.date | None,
    until: dt.date | None,
    tags: tuple[str, ...],
    corpus: str,
    agent: str | None,
    session: str | None,
    per_note: int | None,
    time_words: bool,
    rerank: bool | None,
    explain: bool,
    as_json: bool,
) -> None:
    """Search the notes for QUERY (by meaning and by exact words).

    Filters narrow the search before ranking, so matches are found however they rank
    against the rest of the vault. A time in the query ("what did I decide last week") is
    read as dates unless --since/--until is given; when nothing is dated then, the notes of
    any date are searched (and stderr says so). While the notes are still being read (a
    first index), stderr says how far; --json carries it as `indexing`. Transcripts
    (--corpus sessions or all) are searched only when they are indexed, and only those
    `tools.sessions.visibility` lets the asker (--agent, --session) see.
    """
    _numpy_on_one_thread()
    from dataclasses import replace

    from apus.cli.search_context import SearchContext
    from apus.index.note_filter import CORPUS_SOURCES, Asker, SessionScope
    from apus.search.options import SearchOptions

    filters = replace(
        _filters(paths, since, until, tags),
        sources=CORPUS_SOURCES[corpus],
        scope=SessionScope(asker=Asker(agent, session)),
    )
    options = SearchOptions(
        mode=mode,
        limit=limit,
        filters=filters,
        per_note=per_note,
        time_words=time_words,
        rerank=rerank,
    )
    with _open() as memory:
        response = memory.search(" ".join(query), options)
        reading = memory.reading()
    context = SearchContext(response.time_window, response.widened, reading, response.coverage)
    _show(response, context, explain=explain, as_json=as_json)


def _show(
    response: SearchResponse,
    context: SearchContext | None = None,
    *,
    explain: bool,
    as_json: bool,
) -> None:
    """A search's (or `related`'s) hits; `context`: what a search says beside them."""
    if as_json:
        _json(
            {
                "query": response.query,
                "mode": response.ran,
                "legs": {name: asdict(leg) for name, leg in response.legs.items()},
                **(context.as_json() if context is not None else {}),
                "results": [
                    {**_hit_json(hit, explain, response.coverage), "weak": hit.weak}
                    for hit in response.hits
                ],
            }
        )
        return
    from apus.cli.render import print_hits

    for notice in context.notices() if context is not None else []:
        click.echo(notice, err=True)
    for name, leg in response.legs.items():
        if leg.ran and leg.fix:  # it answered, from an index it could not update
            why = leg.reason.rstrip(".")
            _safe_echo_err(f"{name.capitalize()} search answered, but {why}. Fix: {leg.fix}")
    print_hits(response, explain=explain)


@memory.command()
@click.argument("path")
@click.option("-n", "--limit", type=click.IntRange(1, 200), default=10, show_default=True)
@filter_options
@click.option("--explain", is_flag=True, help="Show how each score was made.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with `results`.")
@guarded
def related(
    path: str,
    limit: int,
    paths: tuple[str, ...],
    since: dt.date | None,
    until: dt.date | None,
    tags: tuple[str, ...],
    explain: bool,
    as_json: bool,
) -> None:
    """Notes most related to the note at PATH (a path from a search result).

    By the note's own vectors when embeddings are ready (nothing is embedded), else by its
    title and headings.
    """
    _numpy_on_one_thread()
    with _open() as session:
        response = session.related(path, limit, _filters(paths, since, until, tags))
    _show(response, explain=explain, as_json=as_json)


@memory.command()
@click.argument("path")
@click.option("--from", "start", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--lines", type=click.IntRange(1, 2000), default=200, show_default=True, help="How many."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded
def get(path: str, start: int, lines: int, as_json: bool) -> None:
    """Print lines of the indexed note at PATH (as search results name it).

    PATH may be a result's citation: `notes/a.md#L12-L30` prints those lines,
    `notes/a.md#L12` a page from line 12. Only indexed Markdown notes inside the vault
    (or `extraPaths`) are read.
    """
    _numpy_on_one_thread()
    with _open() as session:
        window = session.get(path, start, lines)
    if as_json:
        _json(
            {
                "path": window.path,
                "text": window.text,
                "from": window.start,
                "lines": window.lines,
                "total_lines": window.total_lines,
                "truncated": window.truncated,
                "next_from": window.next_start,
            }
        )
        return
    from apus.terminal_text import terminal_safe

    click.echo(terminal_safe(window.text, keep_newlines=True))
    if window.truncated:
        click.secho(
            f"… more content: apus memory get {window.path} --from {window.next_start}",
            fg="yellow",
            err=True,
        )


def _hit_json(hit: SearchHit, explain: bool, coverage: float | None) -> dict[str, Any]:
    from apus.memory.hit_json import hit_json

    data = {
        **hit_json(hit, case="snake", coverage=coverage),
        "title": hit.title,
        "heading": hit.heading,
        "highlights": [list(span) for span in hit.highlights],
        "date": hit.note_date,
        "legs": list(hit.legs),
    }
    if explain:
        data["explain"] = asdict(hit.explain)
    return data


@memory.command()
@click.argument("text", nargs=-1, required=True)
@click.option(
    "--target",
    type=click.Choice(["daily", "MEMORY.md", "USER.md"]),
    default="daily",
    show_default=True,
    help="Today's daily note (memory/YYYY-MM-DD.md), MEMORY.md or USER.md.",
)
@click.option("--importance", type=click.IntRange(1, 10), help="How much it matters, 1-10.")
@click.option(
    "--trigger",
    "triggers",
    multiple=True,
    metavar="PHRASE",
    help="A phrase that should recall this entry (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded
def add(
    text: tuple[str, ...],
    target: Target,  # one of click.Choice's
    importance: int | None,
    triggers: tuple[str, ...],
    as_json: bool,
) -> None:
    """Append TEXT as one entry to a memory note, and index it.

    Only appends (nothing in the note is changed), and only to today's daily note,
    MEMORY.md or USER.md of the vault; off unless memory.write.enabled is true
    (APUS_MEMORY__WRITE__ENABLED=true).
    """
    from apus.memory.writer import Entry
    from apus.search.time_words import today

    entry = Entry(" ".join(text), target, importance, triggers)
    now = dt.datetime.combine(today(), dt.datetime.now().time())
    with _open() as session:
        written = session.write(entry, now)
    place = written.entry
    if as_json:
        _json(
            {
                "path": place.path,
                "start_line": place.start_line,
                "end_line": place.end_line,
                "citation": place.citation,
                "created": place.created,
                "indexed": written.indexed,
                "notices": list(written.notices),
            }
        )
        return
    _safe_echo(f"Written to {place.citation}.")
    if not written.indexed:
        _safe_echo(f"Written, and {written.searchable}", fg="yellow")
    for notice in written.notices:
        click.secho(f"Note: {notice}.", fg="yellow", err=True)


@memory.command()
@click.option("--deep", is_flag=True, help="Also probe the embedding provider once.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded
def status(deep: bool, as_json: bool) -> None:
    """What is indexed, what was skipped and why, and the state of embeddings."""
    with _open() as session:
        report = session.status(deep=deep)
    if as_json:
        _json(report.as_dict())
        return
    from apus.cli.render import print_status

    print_status(report)


@memory.command()
@click.argument("message", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with `entries`.")
@guarded
def recall(message: tuple[str, ...], as_json: bool) -> None:
    """Entries of MEMORY.md / USER.md whose `triggers` strongly match MESSAGE (at most 3).

    Uses the keyword analyzer and, when embeddings are ready, one query embedding; prints
    nothing (or an empty list) when no trigger matches strongly.
    """
    _numpy_on_one_thread()
    with _open() as session:
        entries = session.recall(" ".join(message))
    if as_json:
        _json({"entries": [asdict(entry) for entry in entries]})
        return
    for entry in entries:
        _safe_echo(
            f"{entry.path}:{entry.start_line}-{entry.end_line}  {entry.score:.2f}  "
            f"(trigger: {entry.trigger})"
        )
        _safe_echo(f"    {entry.snippet}")
