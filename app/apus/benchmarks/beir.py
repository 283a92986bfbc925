"""BEIR-layout retrieval evaluation: corpus -> Markdown vault -> real pipeline -> metrics."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from apus import paths
from apus.config import Settings, load_settings
from apus.search.engine import SearchOptions


@dataclass(frozen=True)
class Collection:
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> relevance


@dataclass(frozen=True)
class ModeMetrics:
    mode: str
    queries: int
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float


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
    vault: Path, index_dir: Path, model_path: str, prefix_scheme: str, extra: dict[str, object]
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


def workspace(beir_dir: Path, limit_docs: int | None) -> Path:
    """A stable folder per collection, so a second run reuses the vault and cached vectors."""
    key = hashlib.sha256(f"{beir_dir.resolve()}:{limit_docs}".encode()).hexdigest()[:12]
    return paths.cache_dir() / "eval" / key


def evaluate(
    settings: Settings,
    collection: Collection,
    mapping: dict[str, str],
    modes: tuple[str, ...],
    *,
    mmr: bool | None = None,
    on_query: Callable[[str, int, int], None] | None = None,
) -> list[ModeMetrics]:
    from apus.memory import Memory

    memory = Memory(settings=settings)
    results = []
    try:
        for mode in modes:
            options = SearchOptions(mode=mode, limit=100, min_score=0.0, mmr=mmr)  # type: ignore[arg-type]
            ndcg = recall = mrr = 0.0
            total = len(collection.queries)
            for number, (query_id, text) in enumerate(collection.queries.items(), start=1):
                response = memory.search(text, options)
                ranked: list[str] = []
                for hit in response.hits:
                    doc = mapping.get(hit.path)
                    if doc is not None and doc not in ranked:
                        ranked.append(doc)
                relevant = collection.qrels[query_id]
                ndcg += ndcg_at(ranked, relevant, 10)
                recall += recall_at(ranked, relevant, 100)
                mrr += mrr_at(ranked, relevant, 10)
                if on_query is not None:
                    on_query(mode, number, total)
            count = max(total, 1)
            results.append(ModeMetrics(mode, total, ndcg / count, recall / count, mrr / count))
    finally:
        memory.close()
    return results
