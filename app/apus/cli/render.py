"""Human-readable output of search results and status for the terminal.

Everything that comes from notes, paths or providers goes through `terminal_safe` and into
`Text` objects, never into markup: a title like `[link=...]` or one holding ESC is shown as
written, not obeyed by the terminal.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from apus.index.status import EmbeddingsState, IndexStatus
from apus.memory.hit_json import from_partial_vectors
from apus.search.results import SearchResponse
from apus.terminal_text import terminal_safe
from apus.units import human_size


def _line(*parts: str | tuple[str, str]) -> Text:
    """A line of plain and (text, style) parts, each made safe to print."""
    line = Text()
    for part in parts:
        text, style = (part, "") if isinstance(part, str) else part
        line.append(terminal_safe(text), style=style)
    return line


def _score_text(score: float) -> str:
    """Three decimals, or three significant digits for a score too small for them: a result
    that ranks never reads as 0.000."""
    return f"{score:.3f}" if score == 0 or abs(score) >= 0.001 else f"{score:.2e}"


def print_hits(response: SearchResponse, *, explain: bool = False) -> None:
    """The hits, best first; weak ones are marked `weak`, those search by meaning found
    while it covered only part of the vault `partial vectors`."""
    console = Console(highlight=False)
    for name, leg in response.legs.items():
        if not leg.ran and leg.reason and "not requested" not in leg.reason:
            what = "reranking" if name == "rerank" else f"{name} search"
            console.print(_line((f"{what} did not run: {leg.reason}", "yellow")))
    if not response.hits:
        console.print("No matches.")
        return
    for number, hit in enumerate(response.hits, start=1):
        # An image or audio file has no lines to point at: its type and size instead.
        where = f"  ({hit.media.label})" if hit.media else f":{hit.start_line}-{hit.end_line}"
        header = _line(
            (f"{number:>2}. ", "dim"),
            (hit.path, "bold cyan"),
            (where, "cyan"),
            (f"  {_score_text(hit.score)}", "green"),
            (f"  [{'+'.join(hit.legs)}]", "dim"),
        )
        if hit.title:
            header.append_text(_line((f"  {hit.title}", "bold")))
        if hit.weak:
            header.append_text(_line(("  (weak)", "yellow")))
        if from_partial_vectors(hit, response.coverage):
            header.append_text(_line(("  (partial vectors)", "yellow")))
        console.print(header)
        # One stand-in per character: the highlight offsets still point at the words.
        snippet = Text("    " + terminal_safe(hit.snippet))
        for start, end in hit.highlights:
            snippet.stylize("bold yellow", start + 4, end + 4)
        console.print(snippet)
        if explain:
            e = hit.explain
            vector = "-" if e.vector_raw is None else f"{e.vector_raw:.3f}→{e.vector_norm:.3f}"
            text = "-" if e.text_raw is None else f"{e.text_raw:.2f}→{e.text_norm:.3f}"
            # The reranker's score, and the relevance it made of the merged one.
            rerank = (
                ""
                if e.reranked is None
                else f"→ reranked {e.reranked:.3f} (model {e.rerank:.2f})  "
            )
            console.print(
                f"    [dim]vector {vector}  keyword {text}  merged {e.merged:.3f}  {rerank}"
                f"× recency {e.recency_weight:.3f} (decay {_score_text(e.recency)}) "
                f"× importance {e.importance:.2f} × curated {e.curated:.2f} "
                f"× language {e.language:.2f} "
                f"× diversity {e.diversity:.3f}  "
                f"tier {e.tier}  mmr #{e.mmr_position or '-'}[/dim]"
            )


def print_status(report: IndexStatus) -> None:
    console = Console(highlight=False)

    def row(label: str, value: str) -> None:
        console.print(_line((f"{label:<10}", "bold"), " ", value))

    row("Vault", report.vault)
    row("Index", report.index_dir)
    if not report.indexed:
        console.print("Not indexed yet. Run: apus memory index")
    else:
        row(
            "Notes",
            f"{report.files} files, {report.chunks} chunks, "
            f"{human_size(report.index_bytes)} on disk",
        )
        row("Last sync", report.last_sync or "never")
        row("Keyword", report.keyword)
    outcome = report.last_sync_outcome
    if outcome is not None and not outcome.ok:
        at = outcome.as_dict()["at"]
        row("Sync", f"FAILED at {at} ({outcome.failures} in a row): {outcome.error}")
        if outcome.fix:
            console.print(_line(f"  Fix: {outcome.fix}"))
        if report.store_set_aside is not None:
            moved = report.store_set_aside
            row("Repaired", f"a damaged database ({moved.reason}) was moved to {moved.moved_to}")
    if outcome is not None and outcome.recovered is not None:
        row("Crashes", outcome.recovered.sentence())
        console.print(_line(f"  Fix: {outcome.recovered.fix}"))
    row("Provider", report.provider)
    print_embeddings(console, report.embeddings)
    _print_sessions(console, report)
    if report.skipped:
        row("Skipped", f"{len(report.skipped)} file(s)")
        for item in report.skipped:
            console.print(_line(f"  {item.rel_path}: {item.reason}"))
    if report.problems:
        row("Problems", f"{len(report.problems)} note(s) not indexed whole:")
        for problem in report.problems:
            kept = "indexed without it" if problem.indexed else "skipped"
            console.print(_line(f"  {problem.path}: {problem.reason} ({kept})"))
            console.print(_line(f"    Fix: {problem.fix}"))
    if report.replaced_utf8:
        row(
            "Note",
            f"{len(report.replaced_utf8)} file(s) had invalid UTF-8 "
            "(shown with replacement characters):",
        )
        for path in report.replaced_utf8:
            console.print(_line(f"  {path}"))


def _print_sessions(console: Console, report: IndexStatus) -> None:
    """Transcripts, when they are on or some are still indexed."""
    sessions = report.sessions
    summary = sessions.summary
    if not sessions.enabled and not summary.files:
        return
    state = "" if sessions.enabled else " (off: the next sync removes them)"
    line = f"{summary.files} transcripts, {summary.messages} messages{state}"
    console.print(_line(("Sessions  ", "bold"), " ", line))
    for source in sessions.sources:
        where = ", ".join(source.roots) or "no longer configured"
        missing = "" if source.present or not source.roots else " (not there)"
        console.print(_line(f"  {source.client}: {source.sessions} sessions from {where}{missing}"))
    for item in summary.skipped:
        counts = item.lines
        console.print(
            _line(
                f"  {item.session_key}: skipped {counts.malformed} malformed, "
                f"{counts.unknown} unknown, {counts.oversized} oversized line(s)"
            )
        )


def print_embeddings(console: Console, state: EmbeddingsState) -> None:
    line = state.state + (f": {state.reason}" if state.reason else "")
    console.print(_line(("Embeddings", "bold"), " ", line))
    if state.fix:
        console.print(_line(f"  fix: {state.fix}"))
    details = state.as_dict()
    for key in ("state", "reason", "fix"):
        details.pop(key, None)
    if state.eta_seconds is not None:
        details["eta"] = f"{state.eta_seconds:.0f}s"
    for key, value in details.items():
        console.print(_line(f"  {key}: {value}"))
