"""Reranker scores kept for evaluation: each (model, query, passage, length) is scored once
across every setting of a run and every later run, in one SQLite file of the evaluation
cache (the model is loaded only when a pair is missing)."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from apus import paths
from apus.config import RerankSettings
from apus.search.rerank.scorer import RerankScorer, make_scorer, scorer_identity
from apus.search.rerank.stage import Reranker


def scores_file() -> Path:
    return paths.cache_dir() / "eval" / "rerank-scores.sqlite"


class ScoreStore:
    """Scores by the hash of what made them; safe to share between searchers."""

    def __init__(self, path: Path | None = None) -> None:
        target = path or scores_file()
        target.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(target, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS scores(key TEXT PRIMARY KEY, score REAL)")
        self._lock = threading.Lock()

    def get(self, keys: Sequence[str]) -> dict[str, float]:
        found: dict[str, float] = {}
        with self._lock:
            for first in range(0, len(keys), 500):
                part = list(keys[first : first + 500])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT key, score FROM scores WHERE key IN ({marks})", part
                )
                found.update((key, float(score)) for key, score in rows)
        return found

    def put(self, scores: dict[str, float]) -> None:
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?)", scores.items())

    def close(self) -> None:
        self._db.close()


class RememberingScorer:
    """The scorer the settings name, behind the store: only pairs never scored reach the
    model. It takes all of a search's passages at once, so the stage's deadline never cuts
    an evaluation (whose figures are quality; `apus bench search` times the stage)."""

    def __init__(self, settings: RerankSettings, store: ScoreStore) -> None:
        self._settings = settings
        self._store = store
        self._identity = scorer_identity(settings)
        self._scorer: RerankScorer | None = None
        self.label = self._identity

    @property
    def batch_size(self) -> int:
        return 1_000_000

    def score(
        self, query: str, passages: Sequence[str], *, timeout: float, passage_tokens: int
    ) -> list[float]:
        keys = [self._key(query, passage, passage_tokens) for passage in passages]
        known = self._store.get(keys)
        missing = [i for i, key in enumerate(keys) if key not in known]
        if missing:
            fresh = self._scored(query, [passages[i] for i in missing], passage_tokens)
            fresh_keys = {keys[i]: score for i, score in zip(missing, fresh, strict=True)}
            self._store.put(fresh_keys)
            known.update(fresh_keys)
        return [known[key] for key in keys]

    def _scored(self, query: str, passages: list[str], passage_tokens: int) -> list[float]:
        """The model's scores, in the runs a search makes (shortest passages first, the
        model's run size), so an evaluation scores what a search would."""
        if self._scorer is None:
            self._scorer = make_scorer(self._settings)
        scorer = self._scorer
        order = sorted(range(len(passages)), key=lambda i: len(passages[i]))
        scores: dict[int, float] = {}
        for first in range(0, len(order), max(1, scorer.batch_size)):
            run = order[first : first + scorer.batch_size]
            found = scorer.score(
                query,
                [passages[i] for i in run],
                timeout=3600.0,
                passage_tokens=passage_tokens,
            )
            scores.update(zip(run, found, strict=True))
        return [scores[i] for i in range(len(passages))]

    def _key(self, query: str, passage: str, tokens: int) -> str:
        text = "\0".join((self._identity, str(tokens), query, passage))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def close(self) -> None:
        if self._scorer is not None:
            self._scorer.close()


def remembering_reranker(settings: RerankSettings, store: ScoreStore) -> Reranker:
    """The stage for one evaluated setting, its scores kept in `store`."""
    return Reranker(lambda: RememberingScorer(settings, store))
