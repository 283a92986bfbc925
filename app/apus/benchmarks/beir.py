"""BEIR-layout retrieval evaluation: corpus -> Markdown vault -> real pipeline -> metrics."""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import yaml

from apus import paths
from apus.benchmarks.textbook_bm25 import TextbookBm25
from apus.config import Settings, load_settings
from apus.errors import ConfigError
from apus.search.engine import Searcher
from apus.search.options import Mode, SearchOptions
from apus.search.vector_leg import VectorAvailability, VectorLeg

Split = Literal["all", "odd", "even"]
# Only query-time settings may vary within one run: the index (chunks, vectors) is shared.
# Keys may be written relative to the first (`hybrid.merge=rrf`, `rerank.enabled=true`).
VARIABLE_PREFIX = "memory.search.query."
RERANK_PREFIX = "memory.search.rerank."


@dataclass(frozen=True)
class Collection:
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> relevance


@dataclass(frozen=True)
class ModeMetrics:
    mode: str  # a search Mode, or "textbook" for the reference BM25
    queries: int
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    reranked: float = 0.0  # the share of queries the second stage reranked


@dataclass(frozen=True)
class Variant:
    """One set of query-time settings to score: `label` as the user wrote it."""

    label: str
    overrides: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class VariantResult:
    variant: Variant
    metrics: list[ModeMetrics]


DEFAULTS = Variant("defaults")


def load_collection(beir_dir: Path, qrels_file: Path, limit_docs: int | None) -> Collection:
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_file.read_text(encoding="utf-8").splitlines()[1:]:
        parts = line.split("\t")
        if len(parts) >= 3 and int(parts[2]) > 0:
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    judged = {doc for docs in qrels.values() for doc in docs}
    corpus: dict[str, tuple[str, str]] = {}
    extra: dict[str, tuple[str, str]] = {}
    with open(beir_dir / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            entry = (row.get("title") or "", row.get("text") or "")
            if row["_id"] in judged:
                corpus[row["_id"]] = entry
            else:
                extra[row["_id"]] = entry
    # Every judged document stays in; distractors fill up to the limit (in file order).
    room = None if limit_docs is None else max(0, limit_docs - len(corpus))
    for doc_id, entry in extra.items():
        if room is not None and room <= 0:
            break
        corpus[doc_id] = entry
        if room is not None:
            room -= 1
    queries: dict[str, str] = {}
    with open(beir_dir / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["_id"] in qrels:
                queries[row["_id"]] = row["text"]
    return Collection(corpus, queries, qrels)


def select_queries(queries: Mapping[str, str], split: Split) -> dict[str, str]:
    """The queries of one half, for tuning on one and reporting on the other: odd or even
    numeric ids (other ids by their 1-based position in the file)."""
    if split == "all":
        return dict(queries)
    wanted = 1 if split == "odd" else 0
    kept = {}
    for position, (query_id, text) in enumerate(queries.items(), start=1):
        number = int(query_id) if query_id.isdigit() else position
        if number % 2 == wanted:
            kept[query_id] = text
    return kept


def parse_variant(text: str) -> Variant:
    """`key=value[,key=value...]` of query or rerank settings, e.g.
    `memory.search.query.hybrid.vectorWeight=0.5` or, relative to `memory.search.query.`,
    `hybrid.merge=rrf` (`rerank.enabled=true` to `memory.search.`); values are TOML
    literals or strings."""
    overrides: dict[str, object] = {}
    for assignment in re.split(r",(?=\s*[\w.]+\s*=)", text):
        key, sep, raw = assignment.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(
                f"`--set {text}` is not key=value.",
                fix="apus eval ... --set hybrid.vectorWeight=0.5",
            )
        if key.startswith("rerank."):
            key = "memory.search." + key
        elif not key.startswith("memory."):
            key = VARIABLE_PREFIX + key
        if not key.startswith((VARIABLE_PREFIX, RERANK_PREFIX)):
            raise ConfigError(
                f"`--set {key}` would change the index, which all settings of a run share.",
                fix=f"vary only {VARIABLE_PREFIX}* and {RERANK_PREFIX}* keys (run `apus "
                "eval` again for the others)",
            )
        overrides[key] = _literal(raw.strip())
    return Variant(text, overrides)


def _literal(raw: str) -> object:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _file_name(doc_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", doc_id)
    return f"{safe}.md"


def write_vault(collection: Collection, vault: Path) -> dict[str, str]:
    """One note per document (title in frontmatter); returns note path -> doc id."""
    docs = vault / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, str] = {}
    for doc_id, (title, text) in collection.corpus.items():
        name = _file_name(doc_id)
        path = docs / name
        front = yaml.safe_dump({"title": title}, allow_unicode=True, width=10_000).strip()
        content = f"---\n{front}\n---\n\n{text}\n"
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
        mapping[f"docs/{name}"] = doc_id
    return mapping


def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    dcg = sum(
        (2 ** relevant.get(doc, 0) - 1) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k])
    )
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum((2**rel - 1) / math.log2(rank + 2) for rank, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def mrr_at(ranked: list[str], relevant: dict[str, int], k: int) -> float:
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def eval_settings(
    vault: Path, index_dir: Path, model_path: str, prefix_scheme: str, extra: Mapping[str, object]
) -> Settings:
    overrides: dict[str, object] = {
        "vault": str(vault),
        "memory.search.provider": "local" if model_path else "none",
        "memory.search.store.path": str(index_dir),
        **extra,
    }
    if model_path:
        overrides["memory.search.local.modelPath"] = model_path
    if prefix_scheme:
        overrides["memory.search.local.prefixScheme"] = prefix_scheme
    return load_settings(overrides=overrides)


def index_name(model_path: str, prefix_scheme: str) -> str:
    """The index folder of one model and prefix scheme inside an evaluation workspace."""
    return f"{Path(model_path).stem if model_path else 'keyword'}-{prefix_scheme or 'auto'}"


def workspace(beir_dir: Path, limit_docs: int | None) -> Path:
    """A stable folder per collection, so a second run reuses the vault and cached vectors."""
    key = hashlib.sha256(f"{beir_dir.resolve()}:{limit_docs}".encode()).hexdigest()[:12]
    return paths.cache_dir() / "eval" / key


class _RememberingLeg:
    """A vector leg whose answers are kept per (query, k), so that every setting and mode
    of one run embeds each query once. The session that made the real leg closes it."""

    def __init__(self, leg: VectorLeg) -> None:
        self._leg = leg
        self._answers: dict[tuple[str, int], dict[int, float]] = {}

    def availability(self) -> VectorAvailability:
        return self._leg.availability()

    def search(self, query: str, k: int, allowed: np.ndarray | None = None) -> dict[int, float]:
        if allowed is not None:  # the evaluation never filters; a filtered ask is not cached
            return self._leg.search(query, k, allowed)
        key = (query, k)
        if key not in self._answers:
            self._answers[key] = self._leg.search(query, k)
        return dict(self._answers[key])

    def neighbours(self, chunk_ids: list[int], k: int) -> dict[int, float]:
        return self._leg.neighbours(chunk_ids, k)

    def close(self) -> None:
        """The session closes the real leg."""


def evaluate(
    settings_for: Callable[[Mapping[str, object]], Settings],
    collection: Collection,
    mapping: dict[str, str],
    modes: tuple[Mode, ...],
    *,
    variants: Sequence[Variant] = (DEFAULTS,),
    mmr: bool | None = None,
    on_query: Callable[[str, int, int], None] | None = None,
) -> list[VariantResult]:
    """Score every mode under every variant's settings (`settings_for(overrides)`), on the
    index the first variant's settings name."""
    from apus.benchmarks.rerank_scores import ScoreStore, remembering_reranker
    from apus.memory import Memory

    first = Memory(settings=settings_for(variants[0].overrides))
    real = first.searcher().vector_leg
    leg = _RememberingLeg(real) if real is not None else None
    store = ScoreStore()
    results = []
    try:
        for variant in variants:
            settings = settings_for(variant.overrides)
            searcher = Searcher(
                settings,
                vector_leg=leg,
                strict=first.strict,
                reranker=remembering_reranker(settings.search.rerank, store),
            )
            try:
                metrics = [
                    _score_mode(searcher, mode, collection, mapping, mmr, on_query)
                    for mode in modes
                ]
            finally:
                searcher.reranker.close()
                searcher.close()
            results.append(VariantResult(variant, metrics))
    finally:
        store.close()
        first.close()
    return results


def _score_mode(
    searcher: Searcher,
    mode: Mode,
    collection: Collection,
    mapping: dict[str, str],
    mmr: bool | None,
    on_query: Callable[[str, int, int], None] | None,
) -> ModeMetrics:
    options = SearchOptions(mode=mode, limit=100, min_score=0.0, mmr=mmr)
    runs: dict[str, list[str]] = {}
    total = len(collection.queries)
    reranked = 0
    for number, (query_id, text) in enumerate(collection.queries.items(), start=1):
        ranked: list[str] = []
        response = searcher.search(text, options)
        rerank = response.legs.get("rerank")
        reranked += rerank is not None and rerank.ran
        for hit in response.hits:
            doc = mapping.get(hit.path)
            if doc is not None and doc not in ranked:
                ranked.append(doc)
        runs[query_id] = ranked
        if on_query is not None:
            on_query(mode, number, total)
    metrics = score_runs(mode, runs, collection)
    return replace(metrics, reranked=reranked / max(total, 1))


def score_runs(mode: str, runs: Mapping[str, list[str]], collection: Collection) -> ModeMetrics:
    """Mean nDCG@10, Recall@100 and MRR@10 of ranked document ids per query."""
    ndcg = recall = mrr = 0.0
    for query_id in collection.queries:
        ranked, relevant = runs.get(query_id, []), collection.qrels[query_id]
        ndcg += ndcg_at(ranked, relevant, 10)
        recall += recall_at(ranked, relevant, 100)
        mrr += mrr_at(ranked, relevant, 10)
    total = len(collection.queries)
    count = max(total, 1)
    return ModeMetrics(mode, total, ndcg / count, recall / count, mrr / count)


def textbook_reference(collection: Collection) -> ModeMetrics:
    """The textbook BM25 (`apus.benchmarks.textbook_bm25`) on the same documents and queries."""
    documents = {doc: f"{title} {text}" for doc, (title, text) in collection.corpus.items()}
    bm25 = TextbookBm25(documents)
    runs = {query_id: bm25.search(text, 100) for query_id, text in collection.queries.items()}
    return score_runs("textbook", runs, collection)
