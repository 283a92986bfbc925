"""`apus eval`: retrieval quality on a BEIR-layout document benchmark or on LoCoMo-layout
conversations (agent memory)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from apus.cli.context import guarded

if TYPE_CHECKING:
    from collections.abc import Mapping

    from apus.benchmarks.beir import ModeMetrics, Split, VariantResult
    from apus.config import Settings
    from apus.search.options import Mode


@click.command("eval")
@click.option(
    "--beir",
    "beir_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder with corpus.jsonl and queries.jsonl (documents; needs --qrels).",
)
@click.option(
    "--qrels",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Relevance judgments for --beir (TSV: query-id, corpus-id, score).",
)
@click.option(
    "--locomo",
    "locomo_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of LoCoMo-layout conversations (conv-N.json): conversation memory.",
)
@click.option(
    "--decisions",
    "decisions_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder of Markdown documents (e.g. the tldr pages) to mix with 60 entries an agent "
    "wrote: the agent's own word first.",
)
@click.option(
    "--conversations",
    default="",
    metavar="NAME[,NAME]",
    help="With --locomo: only these conversations (file stems), e.g. conv-26,conv-30.",
)
@click.option(
    "--layout",
    type=click.Choice(["notes", "transcripts"]),
    default="notes",
    show_default=True,
    help="With --locomo: sessions as dated daily notes, or as agent transcripts.",
)
@click.option(
    "--today",
    default="",
    metavar="YYYY-MM-DD|after-last",
    help="With --locomo: the date recency decays from (default: the machine's date); "
    "`after-last` is the day after each conversation's last session.",
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
@click.option(
    "--set",
    "settings_sets",
    multiple=True,
    metavar="KEY=VALUE[,KEY=VALUE]",
    help="Also score under these query or rerank settings (repeatable: one result set "
    "each), e.g. memory.search.query.hybrid.vectorWeight=0.5 or "
    "memory.search.rerank.enabled=true.",
)
@click.option(
    "--split",
    type=click.Choice(["all", "odd", "even"]),
    default="all",
    show_default=True,
    help="Score only odd or even query ids (tune on one half, report on the other).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded
def evaluate(
    beir_dir: Path | None,
    qrels: Path | None,
    locomo_dir: Path | None,
    decisions_dir: Path | None,
    conversations: str,
    layout: str,
    today: str,
    modes: tuple[Mode, ...],  # click.Choice's
    limit_docs: int | None,
    model: str | None,
    prefix_scheme: str,
    mmr: bool | None,
    limit_queries: int | None,
    settings_sets: tuple[str, ...],
    split: Split,  # one of click.Choice's
    as_json: bool,
) -> None:
    """Measure retrieval on a benchmark, per mode, under the configured settings and each
    `--set`, beside a textbook BM25 on the same data.

    --beir: documents as notes; nDCG@10, Recall@100 and MRR@10. --locomo: each conversation
    its own memory (sessions as dated daily notes, or transcripts); evidence Recall@5/@10,
    Hit@5 per category, Recall@5 by the age of the evidence, and the turns the top 5 hold.
    --decisions: the documents of DIR plus 60 decisions and preferences written as an agent
    writes them, asked the way a user asks later; hit@1/@3/@10 of the entry.
    Vaults and embeddings are kept in the cache folder, so a second run only re-asks.
    """
    if sum(d is not None for d in (beir_dir, locomo_dir, decisions_dir)) != 1:
        raise click.UsageError(
            "Give one of --beir DIR --qrels FILE, --locomo DIR or --decisions DIR."
        )
    if decisions_dir is not None:
        from apus.cli.evaluate_decisions import run_decisions

        run_decisions(
            decisions_dir,
            modes=modes,
            model=model,
            prefix_scheme=prefix_scheme,
            settings_sets=settings_sets,
            split=split,
            as_json=as_json,
        )
        return
    if locomo_dir is not None:
        from apus.cli.evaluate_locomo import run_locomo

        run_locomo(
            locomo_dir,
            conversations=[c.strip() for c in conversations.split(",") if c.strip()],
            layout=layout,
            today=today,
            modes=modes,
            model=model,
            prefix_scheme=prefix_scheme,
            settings_sets=settings_sets,
            as_json=as_json,
        )
        return
    if beir_dir is None or qrels is None:
        raise click.UsageError("--beir needs --qrels FILE (the relevance judgments).")
    _run_beir(
        beir_dir,
        qrels,
        modes=modes,
        limit_docs=limit_docs,
        model=model,
        prefix_scheme=prefix_scheme,
        mmr=mmr,
        limit_queries=limit_queries,
        settings_sets=settings_sets,
        split=split,
        as_json=as_json,
    )


def _run_beir(
    collection_dir: Path,
    judgments: Path,
    *,
    modes: tuple[Mode, ...],
    limit_docs: int | None,
    model: str | None,
    prefix_scheme: str,
    mmr: bool | None,
    limit_queries: int | None,
    settings_sets: tuple[str, ...],
    split: Split,  # one of click.Choice's
    as_json: bool,
) -> None:
    """Index a BEIR collection as notes, score every mode under every setting, print."""
    from apus.benchmarks.beir import (
        DEFAULTS,
        Collection,
        eval_settings,
        evaluate,
        index_name,
        load_collection,
        parse_variant,
        select_queries,
        textbook_reference,
        workspace,
        write_vault,
    )
    from apus.cli.progress import index_for_evaluation

    variants = [DEFAULTS, *(parse_variant(text) for text in settings_sets)]
    collection = load_collection(collection_dir, judgments, limit_docs)
    kept = select_queries(collection.queries, split)
    if limit_queries:
        kept = dict(list(kept.items())[:limit_queries])
    collection = Collection(collection.corpus, kept, collection.qrels)
    root = workspace(collection_dir, limit_docs)
    mapping = write_vault(collection, root / "vault")
    index_dir = root / "index" / index_name(model or "", prefix_scheme)

    def settings_for(overrides: Mapping[str, object]) -> Settings:
        return eval_settings(root / "vault", index_dir, model or "", prefix_scheme, overrides)

    for variant in variants:
        settings_for(variant.overrides)  # a bad --set fails now, not after indexing
    click.echo(
        f"{len(collection.corpus)} documents, {len(collection.queries)} judged queries "
        f"({split}); index {index_dir}",
        err=True,
    )
    index_for_evaluation(settings_for({}), show_progress=not as_json)
    chosen = modes or (("keyword", "vector", "hybrid") if model else ("keyword",))
    results = evaluate(settings_for, collection, mapping, chosen, variants=variants, mmr=mmr)
    reference = textbook_reference(collection)
    if as_json:
        _print_json(collection_dir, split, len(collection.corpus), results, reference)
    else:
        _print_table(results, reference)


def _print_table(results: list[VariantResult], reference: ModeMetrics) -> None:
    width = max(len("setting"), *(len(r.variant.label) for r in results))
    click.echo(
        f"{'setting':<{width}}  {'mode':<8} {'queries':>7} {'nDCG@10':>8} {'Recall@100':>10} "
        f"{'MRR@10':>7} {'reranked':>8}"
    )
    for result in results:
        for m in result.metrics:
            click.echo(f"{result.variant.label:<{width}}  {_figures(m)}")
    click.echo(f"{'reference':<{width}}  {_figures(reference)}")
    click.echo("reference: textbook BM25 over title + text (lowercase \\w+, k1 0.9, b 0.4)")


def _figures(m: ModeMetrics) -> str:
    return (
        f"{m.mode:<8} {m.queries:>7} {m.ndcg_at_10:>8.4f} {m.recall_at_100:>10.4f} "
        f"{m.mrr_at_10:>7.4f} {m.reranked:>8.3f}"
    )


def _print_json(
    beir_dir: Path,
    split: str,
    documents: int,
    results: list[VariantResult],
    reference: ModeMetrics,
) -> None:
    data = {
        "collection": str(beir_dir),
        "documents": documents,
        "split": split,
        "runs": [
            {
                "setting": result.variant.label,
                "overrides": result.variant.overrides,
                "modes": [asdict(m) for m in result.metrics],
            }
            for result in results
        ],
        "reference": {"name": "textbook BM25", "k1": 0.9, "b": 0.4, **asdict(reference)},
    }
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))
