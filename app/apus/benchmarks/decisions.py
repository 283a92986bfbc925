"""The agent's own word first, measured: a folder of documents plus the 60 decisions and
preferences of `decisions_data`, written as an agent writes them (through the one writer,
`apus.memory.writer`, into MEMORY.md, USER.md and dated daily notes), then the 60 questions a
user asks later, in their own words. A question is answered when a top result's line range
holds its entry: hit@1, hit@3 and hit@10 per mode and query setting, by odd or even question
number (tune on one half, report on the other).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from apus import paths
from apus.benchmarks.beir import DEFAULTS, Split, Variant, _RememberingLeg
from apus.benchmarks.decisions_data import DECISIONS, Decision
from apus.config import Settings
from apus.search.engine import Searcher, SearchHit
from apus.search.options import Mode, SearchOptions

# The day the questions are asked: every entry is dated back from it (`Decision.days_ago`).
TODAY = dt.date(2026, 12, 1)
# Where the documents go inside the vault, beside the memory notes.
DOCS_FOLDER = "docs"
# What an agent's answer shows: the product's default number of results.
SHOWN = 10


@dataclass(frozen=True)
class WrittenDecision:
    """An entry where the writer put it: its question's answer."""

    number: int  # 1-based, the order of `DECISIONS`
    decision: Decision
    path: str
    start_line: int
    end_line: int

    def answered_by(self, hit: SearchHit) -> bool:
        return (
            hit.path == self.path
            and hit.start_line <= self.end_line
            and self.start_line <= hit.end_line
        )


@dataclass(frozen=True)
class DecisionMetrics:
    mode: str
    questions: int
    hit_at_1: float
    hit_at_3: float
    hit_at_10: float
    mrr_at_10: float
    # hit@3 by where the entry was written: MEMORY.md, USER.md, daily
    hit_at_3_by_target: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class DecisionsResult:
    variant: Variant
    metrics: list[DecisionMetrics]


def workspace(docs: Path) -> Path:
    """A stable folder per documents folder: a second run reuses the vault and its vectors."""
    key = hashlib.sha256(str(docs.resolve()).encode()).hexdigest()[:12]
    return paths.cache_dir() / "eval" / f"decisions-{key}"


def copy_documents(docs: Path, vault: Path) -> int:
    """The Markdown files under `docs`, copied under the vault's documents folder (only those
    that differ); returns how many there are."""
    target = vault / DOCS_FOLDER
    count = 0
    for source in sorted(docs.rglob("*.md")):
        if not source.is_file():
            continue
        count += 1
        copy = target / source.relative_to(docs)
        data = source.read_bytes()
        if copy.is_file() and copy.read_bytes() == data:
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(data)
    return count


def write_decisions(settings: Settings, lock_dir: Path) -> list[WrittenDecision]:
    """Every entry of `DECISIONS` written afresh through the writer, oldest first, each at
    its own day; returns where each landed."""
    from apus.memory.writer import Entry, append_entry

    vault = settings.vault_path()
    for old in ("MEMORY.md", "USER.md"):
        (vault / old).unlink(missing_ok=True)
    shutil.rmtree(vault / "memory", ignore_errors=True)
    order = sorted(range(len(DECISIONS)), key=lambda i: (-DECISIONS[i].days_ago, i))
    written: dict[int, WrittenDecision] = {}
    for minute, index in enumerate(order):
        decision = DECISIONS[index]
        day = TODAY - dt.timedelta(days=decision.days_ago)
        now = dt.datetime.combine(day, dt.time(9, 0)) + dt.timedelta(minutes=minute)
        entry = Entry(decision.text, decision.target, decision.importance)
        place = append_entry(settings, lock_dir, entry, now)
        written[index] = WrittenDecision(
            index + 1, decision, place.path, place.start_line, place.end_line
        )
    return [written[i] for i in range(len(DECISIONS))]


def select(written: Sequence[WrittenDecision], split: Split) -> list[WrittenDecision]:
    if split == "all":
        return list(written)
    wanted = 1 if split == "odd" else 0
    return [w for w in written if w.number % 2 == wanted]


def evaluate_decisions(
    settings_for: Callable[[Mapping[str, object]], Settings],
    written: Sequence[WrittenDecision],
    modes: Sequence[Mode],
    *,
    variants: Sequence[Variant] = (DEFAULTS,),
) -> list[DecisionsResult]:
    """Ask every question in every mode under every variant, with the product's defaults for
    whatever a variant does not set (as `memory_search` asks), on `TODAY`."""
    from apus.memory import Memory

    first = Memory(settings=settings_for(variants[0].overrides))
    real = first.searcher().vector_leg
    leg = _RememberingLeg(real) if real is not None else None
    results = []
    try:
        for variant in variants:
            searcher = Searcher(
                settings_for(variant.overrides),
                vector_leg=leg,
                strict=first.strict,
                today=lambda: TODAY,
            )
            try:
                metrics = [_score(searcher, mode, written) for mode in modes]
            finally:
                searcher.close()
            results.append(DecisionsResult(variant, metrics))
    finally:
        first.close()
    return results


def _score(searcher: Searcher, mode: Mode, written: Sequence[WrittenDecision]) -> DecisionMetrics:
    options = SearchOptions(mode=mode, limit=SHOWN)
    ranks: list[int | None] = []
    for entry in written:
        hits = searcher.search(entry.decision.question, options).hits
        ranks.append(next((r for r, h in enumerate(hits, 1) if entry.answered_by(h)), None))
    count = max(len(written), 1)

    def share(k: int, of: Sequence[int | None]) -> float:
        return sum(1 for rank in of if rank is not None and rank <= k) / max(len(of), 1)

    by_target = {
        target: share(3, [r for r, w in zip(ranks, written, strict=True) if w.path == where])
        for target, where in (("MEMORY.md", "MEMORY.md"), ("USER.md", "USER.md"))
    }
    daily = [r for r, w in zip(ranks, written, strict=True) if w.decision.target == "daily"]
    by_target["daily"] = share(3, daily)
    return DecisionMetrics(
        mode=mode,
        questions=len(written),
        hit_at_1=share(1, ranks),
        hit_at_3=share(3, ranks),
        hit_at_10=share(10, ranks),
        mrr_at_10=sum(1 / r for r in ranks if r is not None) / count,
        hit_at_3_by_target=by_target,
    )
