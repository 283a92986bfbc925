"""`apus eval`: retrieval quality on a BEIR-layout benchmark."""

from __future__ import annotations

from pathlib import Path

import click

from apus.cli.context import run_guarded


@click.command("eval")
@click.option(
    "--beir",
    "beir_dir",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder with corpus.jsonl and queries.jsonl.",
)
@click.option(
    "--qrels",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Relevance judgments (TSV: query-id, corpus-id, score).",
)
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["keyword", "vector", "hybrid"]),
    help="Modes to score (repeatable; default: all that can run).",
)
@click.option("--limit-docs", type=int, help="Keep every judged document plus distractors up to N.")
@click.option(
    "--model",
    type=click.Path(exists=True, dir_okay=False),
    help="A .gguf embedding model for the vector and hybrid modes.",
)
@click.option(
    "--prefix-scheme",
    default="",
    help="Override the task-prefix scheme (e.g. `none` to measure without prefixes).",
)
@click.option("--mmr/--no-mmr", default=None, help="Force MMR on or off (default: config).")
@click.option("--limit-queries", type=int, help="Score only the first N judged queries.")
def evaluate(
    beir_dir: Path,
    qrels: Path,
    modes: tuple[str, ...],
    limit_docs: int | None,
    model: str | None,
    prefix_scheme: str,
    mmr: bool | None,
    limit_queries: int | None,
) -> None:
    """Index a BEIR collection as notes and print nDCG@10, Recall@100 and MRR@10 per mode.

    The vault and the embedding cache are kept in the cache folder, so a second run only
    re-runs the queries.
    """

    def body() -> None:
        from apus.benchmarks.beir import (
            Collection,
            eval_settings,
            evaluate,
            load_collection,
            workspace,
            write_vault,
        )
        from apus.cli.progress import SyncProgressBar
        from apus.memory import Memory

        collection = load_collection(beir_dir, qrels, limit_docs)
        if limit_queries:
            kept = dict(list(collection.queries.items())[:limit_queries])
            collection = Collection(collection.corpus, kept, collection.qrels)
        root = workspace(beir_dir, limit_docs)
        mapping = write_vault(collection, root / "vault")
        scheme_key = prefix_scheme or "auto"
        model_key = Path(model).stem if model else "keyword"
        index_dir = root / "index" / f"{model_key}-{scheme_key}"
        settings = eval_settings(root / "vault", index_dir, model or "", prefix_scheme, {})
        click.echo(
            f"{len(collection.corpus)} documents, {len(collection.queries)} judged queries; "
            f"index {index_dir}",
            err=True,
        )
        with Memory(settings=settings) as memory, SyncProgressBar() as bar:
            report = memory.sync(progress=bar.update)
        if report.embedding.reason:
            click.secho(f"Embeddings: {report.embedding.message()}", fg="yellow", err=True)
        chosen = modes or (("keyword", "vector", "hybrid") if model else ("keyword",))
        metrics = evaluate(settings, collection, mapping, chosen, mmr=mmr)
        click.echo(f"{'mode':<8} {'queries':>7} {'nDCG@10':>8} {'Recall@100':>10} {'MRR@10':>7}")
        for m in metrics:
            click.echo(
                f"{m.mode:<8} {m.queries:>7} {m.ndcg_at_10:>8.4f} {m.recall_at_100:>10.4f} "
                f"{m.mrr_at_10:>7.4f}"
            )

    run_guarded(body)
