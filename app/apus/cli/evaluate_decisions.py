"""`apus eval --decisions`: the agent's own entries among documents, asked for later."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from apus.benchmarks.beir import DEFAULTS, Split, eval_settings, index_name, parse_variant

if TYPE_CHECKING:
    from apus.benchmarks.decisions import DecisionsResult
    from apus.config import Settings
    from apus.search.options import Mode


def run_decisions(
    docs: Path,
    *,
    modes: Sequence[Mode],
    model: str | None,
    prefix_scheme: str,
    settings_sets: Sequence[str],
    split: Split,
    as_json: bool,
) -> None:
    """Build the mixed vault (documents + the entries, written afresh), index it, ask the
    questions of `split`, print hit@1/@3/@10 per mode and setting."""
    from apus.benchmarks.decisions import (
        copy_documents,
        evaluate_decisions,
        select,
        workspace,
        write_decisions,
    )
    from apus.cli.progress import index_for_evaluation

    variants = [DEFAULTS, *(parse_variant(text) for text in settings_sets)]
    root = workspace(docs)
    vault = root / "vault"
    documents = copy_documents(docs, vault)
    base = eval_settings(vault, root / "index" / "probe", model or "", prefix_scheme, {})
    # Chunk sizes are index settings: each keeps an index of its own (turning entry chunks
    # on or off re-chunks the memory notes alone, in the same index).
    sizes = base.search.chunking
    chunking = f"{sizes.tokens}:{sizes.overlap}".encode()
    index_dir = (
        root / "index" / f"{index_name(model or '', prefix_scheme)}-"
        f"{hashlib.sha256(chunking).hexdigest()[:8]}"
    )

    def settings_for(overrides: Mapping[str, object]) -> Settings:
        extra = {"memory.write.enabled": True, **overrides}
        return eval_settings(vault, index_dir, model or "", prefix_scheme, extra)

    for variant in variants:
        settings_for(variant.overrides)  # a bad --set fails now, not after indexing
    written = write_decisions(settings_for({}), root)
    asked = select(written, split)
    click.echo(
        f"{documents} documents and {len(written)} entries, {len(asked)} questions ({split}); "
        f"index {index_dir}",
        err=True,
    )
    index_for_evaluation(settings_for({}), show_progress=not as_json)
    chosen = tuple(modes) or (("keyword", "hybrid") if model else ("keyword",))
    results = evaluate_decisions(settings_for, asked, chosen, variants=variants)
    if as_json:
        _print_json(docs, documents, split, results)
    else:
        _print_table(results)


def _print_table(results: list[DecisionsResult]) -> None:
    width = max(len("setting"), *(len(r.variant.label) for r in results))
    click.echo(
        f"{'setting':<{width}}  {'mode':<8} {'qs':>4} {'hit@1':>6} {'hit@3':>6} {'hit@10':>6} "
        f"{'MRR@10':>6}  hit@3 (MEMORY.md/USER.md/daily)"
    )
    for result in results:
        for m in result.metrics:
            targets = "/".join(f"{value:.3f}" for value in m.hit_at_3_by_target.values())
            click.echo(
                f"{result.variant.label:<{width}}  {m.mode:<8} {m.questions:>4} "
                f"{m.hit_at_1:>6.3f} {m.hit_at_3:>6.3f} {m.hit_at_10:>6.3f} {m.mrr_at_10:>6.3f}"
                f"  {targets}"
            )


def _print_json(docs: Path, documents: int, split: str, results: list[DecisionsResult]) -> None:
    data = {
        "documents": str(docs),
        "document_count": documents,
        "split": split,
        "runs": [
            {
                "setting": result.variant.label,
                "overrides": result.variant.overrides,
                "modes": [asdict(m) for m in result.metrics],
            }
            for result in results
        ],
    }
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))
