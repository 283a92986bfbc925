"""`apus bench`: figures for indexing, searching and embedding speed."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from apus.cli.context import guarded

if TYPE_CHECKING:
    from apus.benchmarks.embed_bench import EmbedBenchResult
    from apus.benchmarks.search_bench import SearchBenchResult
    from apus.search.options import Mode

_CORPUS = click.Path(exists=True, file_okay=False, path_type=Path)


@click.group()
def bench() -> None:
    """Measure speed and memory (prints figures; never changes the corpus)."""


@click.command("_bench-worker", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench_worker(args: tuple[str, ...]) -> None:
    """Internal: one benchmark step in its own process (used by packaged binaries)."""
    from apus.benchmarks.worker import main as worker_main

    worker_main(list(args))


@bench.command("index")
@click.option("--corpus", type=_CORPUS, required=True, help="A folder of Markdown files.")
@click.option(
    "--rounds", type=click.IntRange(min=1), default=3, show_default=True, help="Interleaved rounds."
)
@guarded
def bench_index(corpus: Path, rounds: int) -> None:
    """Cold index, no-change re-sync and peak RSS, next to a bare Whoosh writer and an FTS5
    insert of the same chunks (interleaved rounds; CPU beside wall time)."""

    from apus.benchmarks.index_bench import run_index_bench

    click.echo(f"Indexing {corpus} (keyword only, scratch index)…", err=True)
    r = run_index_bench(corpus, rounds)
    click.echo(f"rounds                {r.rounds} (interleaved; medians)")
    click.echo(f"files                 {r.files}")
    click.echo(f"chunks                {r.chunks}")
    click.echo(f"cold index            {r.cold_seconds:.2f} s (CPU {r.cold_cpu_seconds:.2f} s)")
    click.echo(f"  files/s             {r.files_per_s:.0f}")
    click.echo(f"  chunks/s            {r.chunks_per_s:.0f}")
    click.echo(f"  peak RSS            {r.peak_rss_mb:.0f} MB")
    click.echo(
        f"no-change re-sync     {r.resync_seconds:.2f} s (CPU {r.resync_cpu_seconds:.2f} s, "
        f"peak RSS {r.resync_peak_rss_mb:.0f} MB)"
    )
    click.echo(
        f"bare Whoosh writer    {r.bare_seconds:.2f} s for {r.bare_files} files, the same "
        f"{r.chunks} chunks (CPU {r.bare_cpu_seconds:.2f} s, peak RSS "
        f"{r.bare_peak_rss_mb:.0f} MB)"
    )
    click.echo(
        f"FTS5 insert           {r.fts5_seconds:.2f} s, the same chunks "
        f"(CPU {r.fts5_cpu_seconds:.2f} s)"
    )
    click.echo(f"overhead vs bare      {r.overhead_ratio:.2f}x")


@bench.command("sessions")
@click.option("--sessions", "count", default=2000, show_default=True, help="Transcripts.")
@click.option("--messages", default=50, show_default=True, help="Messages per transcript.")
@click.option("--queries", default=300, show_default=True, help="`sessions search` queries.")
@click.option(
    "--append-many", default=200, show_default=True, help="Transcripts grown by one sync."
)
@click.option(
    "--client",
    type=click.Choice(["paths", "claude-code", "codex"]),
    default="paths",
    show_default=True,
    help="Write the transcripts as this source keeps them (memory.search.sessions.paths, or "
    "that client's own folder).",
)
@click.option(
    "--scratch",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the generated transcripts and index here (default: a temporary folder).",
)
@guarded
def bench_sessions(
    count: int, messages: int, queries: int, append_many: int, client: str, scratch: Path | None
) -> None:
    """Transcripts: cold index messages/s, append cost, `sessions search` p50/p95 (generated
    transcripts, keyword only)."""
    from apus.benchmarks.transcripts_bench import run_sessions_bench, summary_lines

    click.echo(f"Generating {count} transcripts × {messages} messages…", err=True)
    with tempfile.TemporaryDirectory(prefix="apus-bench-") as temporary:
        folder = scratch or Path(temporary)
        result = run_sessions_bench(
            folder,
            sessions=count,
            messages=messages,
            queries=queries,
            append_many=append_many,
            client=client,
        )
    for line in summary_lines(result):
        click.echo(line)


@bench.command("search")
@click.option("--corpus", type=_CORPUS, required=True, help="A folder of Markdown files.")
@click.option("--queries", default=300, show_default=True, help="How many queries to time.")
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["keyword", "vector", "hybrid"]),
    help="Modes to time (repeatable; default keyword, plus hybrid with vectors).",
)
@click.option("--model", type=click.Path(exists=True, dir_okay=False), help="A .gguf for hybrid.")
@click.option(
    "--synthetic-vectors",
    is_flag=True,
    help="Latency only: random unit vectors in FAISS; query vectors from --model (embedded "
    "before the timed searches) or random (see docs).",
)
@click.option("--copies", default=1, show_default=True, help="Index N copies of the corpus.")
@click.option(
    "--vector-dims",
    default=0,
    type=click.IntRange(min=0),
    help="With --synthetic-vectors: search the first N dimensions, as "
    "memory.search.vectorDims does (0: the model's default width).",
)
@click.option(
    "--index-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the index here (reused by the next run) instead of a scratch folder.",
)
@click.option(
    "--rerank",
    "rerank_candidates",
    default="",
    metavar="N[,N]",
    help="Also time a keyword search reranking its top N candidates, for each N "
    "(e.g. 10,20,40): the catalogue reranker, or --rerank-model.",
)
@click.option(
    "--rerank-model",
    type=click.Path(exists=True, dir_okay=False),
    help="A cross-encoder .onnx file (its tokenizer.json beside it) for --rerank.",
)
@guarded
def bench_search(
    corpus: Path,
    queries: int,
    modes: tuple[Mode, ...],  # click.Choice's
    model: str | None,
    synthetic_vectors: bool,
    copies: int,
    vector_dims: int,
    index_dir: Path | None,
    rerank_candidates: str,
    rerank_model: str | None,
) -> None:
    """Query latency p50/p95, wall and thread CPU, over queries sampled from the corpus:
    Apus end to end, its keyword leg alone and SQLite FTS5 over the same chunks, interleaved
    (and, with --rerank, keyword searches reranking their top N)."""

    from apus.benchmarks.search_bench import run_search_bench

    vectors = bool(model) or synthetic_vectors
    chosen = modes or (("keyword", "hybrid") if vectors else ("keyword",))
    with tempfile.TemporaryDirectory(prefix="apus-bench-") as scratch:
        r = run_search_bench(
            corpus,
            index_dir or Path(scratch) / "index",
            queries=queries,
            modes=chosen,
            model_path=model or "",
            synthetic_vectors=synthetic_vectors,
            copies=copies,
            vector_dims=vector_dims,
            rerank_candidates=_counts(rerank_candidates),
            rerank_model=rerank_model or "",
        )
    for line in search_table(r):
        click.echo(line)


def _counts(text: str) -> tuple[int, ...]:
    """`10,20,40` as numbers (a UsageError names a part that is not a positive number)."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not all(part.isdigit() and int(part) > 0 for part in parts):
        raise click.UsageError(f"--rerank {text!r}: give counts like 10,20,40")
    return tuple(int(part) for part in parts)


def _ms(value: float) -> str:
    """A latency with enough digits that a leg of a few microseconds does not print as zero."""
    return f"{value:.1f}" if value >= 10 else f"{value:.3f}"


def search_table(r: SearchBenchResult) -> list[str]:
    """The figures of `apus bench search`: one row per system, then the ratios."""
    note = ""
    if r.synthetic_vectors:
        source = "the model's" if r.embedded_queries else "random"
        note = f" (synthetic vectors, {r.vector_width} dims, {source} query vectors: latency only)"
    lines = [
        f"index: {r.files} files, {r.chunks} chunks (built in {r.index_seconds:.1f} s){note}",
        "systems alternate query by query; ms, wall time | thread CPU time",
    ]
    for t in r.timings:
        lines.append(
            f"{t.name:<12} {t.queries} queries  wall p50 {_ms(t.wall_p50_ms)} ms  "
            f"p95 {_ms(t.wall_p95_ms)} ms  | cpu p50 {_ms(t.cpu_p50_ms)} ms  "
            f"p95 {_ms(t.cpu_p95_ms)} ms  ({t.label})"
        )
    reranks = tuple((t.name, "keyword") for t in r.timings if t.name.startswith("rerank@"))
    pairs = (("keyword", "fts5"), ("keyword-leg", "fts5"), ("hybrid", "keyword"), *reranks)
    for name, base in pairs:
        top, bottom = r.timing(name), r.timing(base)
        if top is None or bottom is None or not bottom.wall_p50_ms or not bottom.cpu_p50_ms:
            continue
        lines.append(
            f"{name} / {base}: p50 wall {top.wall_p50_ms / bottom.wall_p50_ms:.2f}x  "
            f"cpu {top.cpu_p50_ms / bottom.cpu_p50_ms:.2f}x  | p95 wall "
            f"{top.wall_p95_ms / bottom.wall_p95_ms:.2f}x  "
            f"cpu {top.cpu_p95_ms / max(bottom.cpu_p95_ms, 1e-9):.2f}x"
        )
    lines.append(f"peak RSS {r.peak_rss_mb:.0f} MB (this process, indexing included)")
    return lines


@bench.command("hook")
@click.option("--corpus", type=_CORPUS, required=True, help="A folder of Markdown files.")
@click.option(
    "--entries", default=200, show_default=True, help="Trigger entries in MEMORY.md / USER.md."
)
@click.option("--runs", default=50, show_default=True, help="Runs of each process.")
@click.option(
    "--scratch",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the vault, config and index here (default: a temporary folder).",
)
@guarded
def bench_hook(corpus: Path, entries: int, runs: int, scratch: Path | None) -> None:
    """`apus hook claude-code` as a whole process (trigger recall over MEMORY.md / USER.md,
    the corpus beside them) and a one-shot `memory search --mode keyword`, alternating:
    p50/p95 wall and CPU of each."""
    from apus.benchmarks.hook_bench import hook_table, run_hook_bench

    click.echo(f"Indexing {corpus} with {entries} trigger entries (keyword only)…", err=True)
    with tempfile.TemporaryDirectory(prefix="apus-bench-") as temporary:
        folder = scratch or Path(temporary)
        result = run_hook_bench(corpus, folder, entries=entries, runs=runs)
    for line in hook_table(result):
        click.echo(line)


@bench.command("serve")
@click.option("--corpus", type=_CORPUS, required=True, help="A folder of Markdown files.")
@click.option(
    "--notes",
    default=2000,
    show_default=True,
    type=click.IntRange(min=0),
    help="How many files of the corpus make the vault (the first by path; 0: all).",
)
@click.option(
    "--clients", default=8, show_default=True, type=click.IntRange(2, 64), help="Clients at once."
)
@click.option(
    "--writers",
    default=2,
    show_default=True,
    type=click.IntRange(min=0),
    help="Of the clients, how many write entries (memory_write).",
)
@click.option("--searches", default=200, show_default=True, help="Searches a round.")
@click.option("--writes", default=10, show_default=True, help="Entries written a round.")
@click.option(
    "--rounds", default=3, show_default=True, type=click.IntRange(1, 20), help="Rounds of each."
)
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["keyword", "hybrid"]),
    help="Server settings to measure (repeatable; default keyword, plus hybrid with --model).",
)
@click.option(
    "--model",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A .gguf for hybrid search.",
)
@click.option(
    "--scratch",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the vaults, indexes and logs here (default: a temporary folder).",
)
@guarded
def bench_serve(
    corpus: Path,
    notes: int,
    clients: int,
    writers: int,
    searches: int,
    writes: int,
    rounds: int,
    modes: tuple[str, ...],
    model: Path | None,
    scratch: Path | None,
) -> None:
    """Many agents on one `apus mcp --http` against the same calls from one: throughput,
    p50/p95/p99 per tool, errors and CPU, on a scratch copy of the corpus (searches, reads of
    their hits and entries written, alternating rounds); then every entry written is checked
    to be in its note exactly once and found by search."""
    from apus.benchmarks.serve_bench import run_serve_bench, summary_lines

    chosen = modes or (("keyword", "hybrid") if model else ("keyword",))
    if "hybrid" in chosen and model is None:
        raise click.BadParameter("hybrid needs --model M.gguf", param_hint="--mode")

    def say(line: str) -> None:
        click.echo(line, err=True)

    with tempfile.TemporaryDirectory(prefix="apus-bench-") as temporary:
        result = run_serve_bench(
            corpus,
            scratch or Path(temporary),
            modes=[m for m in ("keyword", "hybrid") if m in chosen],
            model=model,
            notes=notes,
            clients=clients,
            writers=writers,
            searches=searches,
            writes=writes,
            rounds=rounds,
            say=say,
        )
    for line in summary_lines(result):
        click.echo(line)


@bench.command("vectors")
@click.option("--vectors", "count", default=118_000, show_default=True, help="Random unit vectors.")
@click.option(
    "--index-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Use the vectors of this index's store instead of random ones.",
)
@click.option("--queries", default=300, show_default=True, help="Held-out vectors as queries.")
@click.option(
    "--dims",
    default="768,512,256",
    show_default=True,
    help="Widths (Matryoshka truncation of the first N dimensions).",
)
@click.option(
    "--kinds",
    default="shortlist,fp16,sq8,hnsw,ivf",
    show_default=True,
    help="Indexes beside flat: shortlist (binary codes rescored exactly, what serves large "
    "indexes), fp16/sq8 (compressed codes, exhaustive), hnsw, ivf.",
)
@guarded
def bench_vectors(count: int, index_dir: Path | None, queries: int, dims: str, kinds: str) -> None:
    """Flat vs the binary shortlist vs HNSW vs IVF at each width: build time, MB, search
    latency p50/p95 (wall and thread CPU, one thread, interleaved) and recall@10 against flat."""
    from apus.benchmarks.vector_bench import (
        held_out,
        random_unit,
        run_vector_bench,
        store_vectors,
        vector_table,
    )

    source = "random" if index_dir is None else f"the store of {index_dir}"
    full = random_unit(count + queries, 768) if index_dir is None else store_vectors(index_dir)
    widths = [int(w) for w in dims.split(",") if w.strip()]
    if not widths or max(widths) > full.shape[1] or min(widths) < 1:
        raise click.BadParameter(f"widths must be 1..{full.shape[1]}", param_hint="--dims")
    indexed, asked = held_out(full, queries)
    chosen = [k.strip() for k in kinds.split(",") if k.strip()]
    say = lambda line: click.echo(line, err=True)  # noqa: E731
    r = run_vector_bench(indexed, asked, widths=widths, kinds=chosen, source=source, say=say)
    for line in vector_table(r):
        click.echo(line)


@bench.command("embed")
@click.option(
    "--model",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The .gguf embedding model.",
)
@click.option("--corpus", type=_CORPUS, required=True, help="A folder of Markdown files.")
@click.option(
    "--limit-files",
    default=200,
    show_default=True,
    help="How many files of the corpus to embed (sorted by path).",
)
@click.option(
    "--rounds",
    default=1,
    show_default=True,
    type=click.IntRange(1, 20),
    help="Run every row this many times, interleaved; each keeps its fastest.",
)
@guarded
def bench_embed(model: Path, corpus: Path, limit_files: int, rounds: int) -> None:
    """Tokens/s of raw llama_cpp.Llama configurations (one sequence per call, packing to N
    tokens, n_batch/n_ubatch, threads, flash attention) and of the product's pipeline, on the
    same texts; the pipeline's ratio to the fastest."""
    from apus.benchmarks.embed_bench import run_embed_bench

    def say(line: str) -> None:
        click.echo(line, err=True)

    r = run_embed_bench(model, corpus, limit_files=limit_files, rounds=rounds, say=say)
    for line in embed_table(r):
        click.echo(line)


def embed_table(r: EmbedBenchResult) -> list[str]:
    """The figures of `apus bench embed`, one row per configuration."""
    best = r.best_raw
    lines = [
        f"{r.files} files, {r.chunks} chunks, {r.tokens} tokens (longest {r.longest}); "
        f"model context {r.settings.get('context')}, device {r.settings.get('device')}",
        f"{'configuration':<48} {'seconds':>8} {'tok/s':>8} {'vs best':>8}  detail",
    ]
    for figure in [*r.raw, r.pipeline]:
        name = "raw: " + figure.label if figure is not r.pipeline else "pipeline (embed stage)"
        share = figure.tokens_per_s / best.tokens_per_s if best.tokens_per_s else 0.0
        lines.append(
            f"{name:<48} {figure.seconds:8.2f} {figure.tokens_per_s:8.0f} {share:8.2f}  "
            f"{figure.detail}"
        )
    lines.append(f"fastest raw: {best.label}")
    lines.append(f"pipeline / fastest raw: {r.ratio:.2f}")
    lines.append(f"first sync, chunking and keyword index included: {r.sync_seconds:.2f} s")
    return lines


@bench.command("tokens")
@click.argument("vault", type=_CORPUS)
@click.option(
    "--model",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A .gguf whose tokenizer counts (vocabulary only; default: the chunker's estimate).",
)
@click.option(
    "--overlap",
    "overlaps",
    multiple=True,
    type=click.IntRange(min=0),
    help="Also count with this chunk overlap (repeatable), beside the configured one.",
)
@click.option("--prefix-scheme", default="", help="The task-prefix scheme (default: the model's).")
@guarded
def bench_tokens(
    vault: Path, model: Path | None, overlaps: tuple[int, ...], prefix_scheme: str
) -> None:
    """Model tokens of a vault's passages as a sync sends them: body, overlap, the title and
    template of the task prefix, special tokens, and identical passages (embedded once)."""
    from apus.benchmarks.token_bench import ESTIMATE, model_tokenizer, run_token_bench, token_table

    tokenizer = model_tokenizer(model) if model is not None else ESTIMATE
    result = run_token_bench(
        vault, tokenizer=tokenizer, overlaps=overlaps, prefix_scheme=prefix_scheme
    )
    for line in token_table(result):
        click.echo(line)
