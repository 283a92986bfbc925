"""Human-readable output of search results and status for the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from apus.index.status import EmbeddingsState, IndexStatus
from apus.search.engine import SearchResponse
from apus.units import human_size


def print_hits(response: SearchResponse, *, explain: bool = False) -> None:
    console = Console(highlight=False)
    for name, leg in response.legs.items():
        if not leg.ran and leg.reason and "not requested" not in leg.reason:
            console.print(f"[yellow]{name} search did not run: {leg.reason}[/yellow]")
    if not response.hits:
        console.print("No matches.")
        return
    for number, hit in enumerate(response.hits, start=1):
        header = Text()
        header.append(f"{number:>2}. ", style="dim")
        header.append(hit.path, style="bold cyan")
        header.append(f":{hit.start_line}-{hit.end_line}", style="cyan")
        header.append(f"  {hit.score:.3f}", style="green")
        header.append(f"  [{'+'.join(hit.legs)}]", style="dim")
        if hit.title:
            header.append(f"  {hit.title}", style="bold")
        console.print(header)
        snippet = Text("    " + hit.snippet)
        for start, end in hit.highlights:
            snippet.stylize("bold yellow", start + 4, end + 4)
        console.print(snippet)
        if explain:
            e = hit.explain
            vector = "-" if e.vector_raw is None else f"{e.vector_raw:.3f}→{e.vector_norm:.3f}"
            text = "-" if e.text_raw is None else f"{e.text_raw:.2f}→{e.text_norm:.3f}"
            console.print(
                f"    [dim]vector {vector}  keyword {text}  merged {e.merged:.3f}  "
                f"× recency {e.recency:.3f} × importance {e.importance:.2f}  tier {e.tier}  "
                f"mmr #{e.mmr_position or '-'}[/dim]"
            )


def print_status(report: IndexStatus) -> None:
    console = Console(highlight=False)
    console.print(f"[bold]Vault[/bold]      {report.vault}")
    console.print(f"[bold]Index[/bold]      {report.index_dir}")
    if not report.indexed:
        console.print("Not indexed yet. Run: apus memory index")
    else:
        console.print(
            f"[bold]Notes[/bold]      {report.files} files, {report.chunks} chunks, "
            f"{human_size(report.index_bytes)} on disk"
        )
        console.print(f"[bold]Last sync[/bold]  {report.last_sync or 'never'}")
        console.print(f"[bold]Keyword[/bold]    {report.keyword}")
    console.print(f"[bold]Provider[/bold]   {report.provider}")
    print_embeddings(console, report.embeddings)
    if report.skipped:
        console.print(f"[bold]Skipped[/bold]    {len(report.skipped)} file(s)")
        for item in report.skipped:
            console.print(f"  {item.rel_path}: {item.reason}")
    if report.replaced_utf8:
        console.print(
            f"[bold]Note[/bold]       {len(report.replaced_utf8)} file(s) had invalid UTF-8 "
            "(shown with replacement characters):"
        )
        for path in report.replaced_utf8:
            console.print(f"  {path}")


def print_embeddings(console: Console, state: EmbeddingsState) -> None:
    line = state.state + (f": {state.reason}" if state.reason else "")
    console.print(Text.assemble(("Embeddings", "bold"), " ", line))
    if state.fix:
        console.print(Text(f"  fix: {state.fix}"))
    details = state.as_dict()
    for key in ("state", "reason", "fix"):
        details.pop(key, None)
    if state.eta_seconds is not None:
        details["eta"] = f"{state.eta_seconds:.0f}s"
    for key, value in details.items():
        console.print(Text(f"  {key}: {value}"))
