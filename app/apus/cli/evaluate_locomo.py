"""`apus eval --locomo`: conversation memory measured like document memory."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from apus.benchmarks.beir import DEFAULTS, eval_settings, index_name, parse_variant
from apus.benchmarks.locomo import (
    AGE_THIRDS,
    CATEGORIES,
    Conversation,
    ConversationMetrics,
    ConversationRun,
    LocomoResult,
    conversation_root,
    evaluate_conversations,
    load_conversations,
    textbook_reference,
    write_notes,
    write_transcripts,
)
from apus.config import Settings
from apus.errors import ConfigError
from apus.index.note_filter import NoteFilter

if TYPE_CHECKING:
    from apus.search.options import Mode


def run_locomo(
    folder: Path,
    *,
    conversations: Sequence[str],
    layout: str,
    today: str,
    modes: Sequence[Mode],
    model: str | None,
    prefix_scheme: str,
    settings_sets: Sequence[str],
    as_json: bool,
) -> None:
    """Build each conversation's memory, index it, ask its questions, print the figures."""
    from apus.cli.progress import index_for_evaluation

    variants = [DEFAULTS, *(parse_variant(text) for text in settings_sets)]
    loaded = load_conversations(folder, conversations)
    day_of = _today_rule(today)
    runs = []
    for conversation in loaded:
        run = _prepare(folder, conversation, layout, model or "", prefix_scheme)
        for variant in variants:
            run.settings_for(variant.overrides)  # a bad --set fails now, not after indexing
        questions = len(conversation.questions)
        click.echo(f"{conversation.name}: {questions} questions ({layout})", err=True)
        index_for_evaluation(run.settings_for({}), show_progress=not as_json)
        runs.append(run)
    chosen = tuple(modes) or (("keyword", "vector", "hybrid") if model else ("keyword",))
    results = evaluate_conversations(runs, chosen, variants=variants, today=day_of)
    references = [textbook_reference(loaded, "session"), textbook_reference(loaded, "turn")]
    if as_json:
        _print_json(folder, loaded, layout, today, results, references)
    else:
        _print_table(results, references)


def _today_rule(text: str) -> Callable[[Conversation], dt.date] | None:
    if not text:
        return None
    if text == "after-last":
        return lambda conversation: conversation.last_day + dt.timedelta(days=1)
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"`--today {text}` is not a date.", fix="--today 2023-12-01, or --today after-last"
        ) from None
    return lambda _conversation: day


def _prepare(
    folder: Path, conversation: Conversation, layout: str, model: str, prefix_scheme: str
) -> ConversationRun:
    root = conversation_root(folder, layout, conversation.name)
    vault = root / "vault"
    vault.mkdir(parents=True, exist_ok=True)
    extra: dict[str, object] = {}
    filters = NoteFilter()
    if layout == "transcripts":
        lines = write_transcripts(conversation, root / "agents")
        extra = {
            "memory.search.experimental.sessionMemory": True,
            "memory.search.sources": ["memory", "sessions"],
            "memory.search.sessions.paths": [str(root / "agents")],
            # The conversations under evaluation only, not this machine's agents' own.
            "memory.search.sessions.clients": [],
        }
        filters = NoteFilter(sources=("memory", "sessions"))
    else:
        lines = write_notes(conversation, vault)
    index_dir = root / "index" / index_name(model, prefix_scheme)

    def settings_for(overrides: Mapping[str, object]) -> Settings:
        return eval_settings(vault, index_dir, model, prefix_scheme, {**extra, **overrides})

    return ConversationRun(conversation, settings_for, lines, filters)


def _print_table(results: list[LocomoResult], references: list[ConversationMetrics]) -> None:
    width = max(len("setting"), *(len(r.variant.label) for r in results))
    categories = list(CATEGORIES.values())
    click.echo(
        f"{'setting':<{width}}  {'mode':<12} {'qs':>5} {'R@5':>6} {'R@10':>6} {'Hit@5':>6} "
        f"{'turns@5':>7} {'reranked':>8}  R@5 by age ({'/'.join(AGE_THIRDS)})  "
        f"Hit@5 ({'/'.join(categories)})"
    )
    rows = [(r.variant.label, m) for r in results for m in r.metrics]
    rows += [("reference", m) for m in references]
    for label, m in rows:
        ages = "/".join(f"{m.recall_at_5_by_age[a]:.3f}" for a in AGE_THIRDS)
        hits = "/".join(f"{m.by_category.get(c, {}).get('hit_at_5', 0.0):.3f}" for c in categories)
        click.echo(
            f"{label:<{width}}  {m.mode:<12} {m.questions:>5} {m.recall_at_5:>6.3f} "
            f"{m.recall_at_10:>6.3f} {m.hit_at_5:>6.3f} {m.turns_at_5:>7.1f} "
            f"{m.reranked:>8.3f}  {ages}  {hits}"
        )
    click.echo(
        "reference: textbook BM25 (lowercase \\w+, k1 0.9, b 0.4) over whole sessions / turns"
    )


def _print_json(
    folder: Path,
    conversations: list[Conversation],
    layout: str,
    today: str,
    results: list[LocomoResult],
    references: list[ConversationMetrics],
) -> None:
    data = {
        "conversations": [c.name for c in conversations],
        "folder": str(folder),
        "layout": layout,
        "today": today or "machine date",
        "runs": [
            {
                "setting": result.variant.label,
                "overrides": result.variant.overrides,
                "modes": [asdict(m) for m in result.metrics],
            }
            for result in results
        ],
        "reference": [asdict(m) for m in references],
    }
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))
