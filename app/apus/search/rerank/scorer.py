"""What scores query-passage pairs for the second stage, and how the settings name one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from apus.config import RerankSettings
from apus.errors import ApusError


class RerankError(ApusError):
    """A reranker could not score: no model, a bad file, a service that failed."""


class RerankScorer(Protocol):
    """Scores how well each passage answers a query: higher is more relevant; only the
    order and spread within one call mean anything."""

    @property
    def label(self) -> str: ...  # the model and where it runs, as answers name it

    @property
    def batch_size(self) -> int: ...  # passages a call scores: the deadline is checked between

    def score(
        self, query: str, passages: Sequence[str], *, timeout: float, passage_tokens: int
    ) -> list[float]:
        """One score per passage, in their order; `timeout`: seconds this call may take;
        `passage_tokens`: the most of each passage a local model reads (a service cuts
        passages itself)."""
        ...

    def close(self) -> None: ...


def make_scorer(settings: RerankSettings) -> RerankScorer:
    """The scorer `settings` name: the local cross-encoder, or a rerank service (each
    imported only here, so a search without a second stage loads neither). Raises
    RerankError with the fix when it cannot be made."""
    if settings.provider == "local":
        from apus.search.rerank.local import local_scorer

        return local_scorer(settings)
    from apus.search.rerank.remote import remote_scorer

    return remote_scorer(settings)


def scorer_identity(settings: RerankSettings) -> str:
    """What the scores of the scorer `settings` name depend on (the model's bytes, or the
    service and its model), known without loading it: what kept scores are keyed by."""
    if settings.provider == "local":
        if settings.local.model_path:
            from pathlib import Path

            from apus.embed.local.filehash import cached_sha256

            path = Path(settings.local.model_path).expanduser()
            return f"local:{cached_sha256(path) if path.is_file() else path}"
        from apus.search.rerank.catalog import get_reranker

        try:
            return f"local:{get_reranker(settings.model).model.sha256}"
        except ApusError:
            return f"local:{settings.model}"
    from apus.search.rerank.remote import SERVICES

    service = SERVICES[settings.provider]
    base = settings.remote.base_url or service.base_url
    return f"{service.id}:{settings.model or service.default_model}:{base}"
