"""Rerank services: llama.cpp's server (`/v1/rerank`, which vLLM and other servers share),
Jina, Voyage, Cohere and Amazon Bedrock. Each request goes through the embedding
providers' transport (retries of 429 and 5xx within the deadline, keys only to the
configured host, redacted errors); the answers, in whatever order, are read back by index."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from apus.config import RerankSettings
from apus.embed.base import (
    EmbeddingAuthError,
    EmbeddingConnectionError,
    EmbeddingError,
    EmbeddingTimeout,
    EmbeddingUnavailable,
)
from apus.embed.retry import Deadline
from apus.embed.transport import ServiceErrors, ServiceTransport
from apus.search.rerank.scorer import RerankError

if TYPE_CHECKING:
    import httpx

_BASE_URL_FIX = "check memory.search.rerank.remote.baseUrl: it should point at the service's API"
_DEADLINE_FIX = "raise memory.search.rerank.deadlineMs (or lower rerank.candidates)"


@dataclass(frozen=True)
class RerankService:
    """A rerank API: where it is, what it is called with and what its answer holds."""

    id: str
    label: str
    default_model: str
    base_url: str  # "" when the user's own server (llama.cpp) or the region decides
    key_env: tuple[str, ...]  # environment variables that may hold the key, first wins
    results: str  # the answer's list of {index, <score>}
    score_field: str
    count_field: str  # the request's "return this many" field ("" for none)


SERVICES: dict[str, RerankService] = {
    service.id: service
    for service in (
        RerankService(
            "llama-cpp", "llama.cpp server", "", "", (), "results", "relevance_score", "top_n"
        ),
        RerankService(
            "jina",
            "Jina",
            "jina-reranker-v2-base-multilingual",
            "https://api.jina.ai/v1",
            ("JINA_API_KEY",),
            "results",
            "relevance_score",
            "top_n",
        ),
        RerankService(
            "voyage",
            "Voyage AI",
            "rerank-2.5",
            "https://api.voyageai.com/v1",
            ("VOYAGE_API_KEY",),
            "data",
            "relevance_score",
            "top_k",
        ),
        RerankService(
            "cohere",
            "Cohere",
            "rerank-v3.5",
            "https://api.cohere.com/v2",
            ("COHERE_API_KEY", "CO_API_KEY"),
            "results",
            "relevance_score",
            "top_n",
        ),
        RerankService(
            "bedrock",
            "Amazon Bedrock",
            "amazon.rerank-v1:0",
            "",
            (),
            "results",
            "relevanceScore",
            "",
        ),
    )
}


class ServiceReranker:
    """POST the query and the passages to a service's rerank endpoint; one score a passage,
    in the passages' order whatever order the service answers in."""

    def __init__(
        self,
        service: RerankService,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        body: Callable[[str, list[str]], dict[str, Any]] | None = None,
        sign: Callable[[httpx.Request], None] | None = None,
    ) -> None:
        self.service = service
        self.model = model
        self.endpoint = _endpoint(service, base_url)
        self._api_key = api_key
        self._body = body or self._standard_body
        self._sign = sign
        key_fix = _key_fix(service)
        self._transport = ServiceTransport(ServiceErrors(service.label, key_fix), secrets=[api_key])

    @property
    def label(self) -> str:
        model = f" {self.model}" if self.model else ""
        return f"{self.service.label}{model}"

    @property
    def batch_size(self) -> int:
        return 1000  # one request a search: the deadline is its timeout

    def score(
        self, query: str, passages: Sequence[str], *, timeout: float, passage_tokens: int
    ) -> list[float]:
        if not passages:
            return []
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        body = json.dumps(self._body(query, list(passages))).encode("utf-8")
        try:
            answer = self._transport.request(
                "POST",
                self.endpoint,
                deadline=Deadline(timeout),
                content=body,
                headers=headers,
                sign=self._sign,
            )
        except EmbeddingTimeout as exc:
            reason = f"{self.service.label} did not answer within {timeout * 1000:.0f} ms"
            raise RerankError(reason, fix=_DEADLINE_FIX) from exc
        except EmbeddingError as exc:
            raise RerankError(exc.reason, fix=self._fix(exc)) from exc
        return self._scores(answer, len(passages))

    def _standard_body(self, query: str, passages: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"query": query, "documents": passages}
        if self.model:
            body["model"] = self.model
        if self.service.count_field:
            body[self.service.count_field] = len(passages)
        if self.service.id == "voyage":
            body["truncation"] = True
        if self.service.id == "jina":
            body["return_documents"] = False
        return body

    def _scores(self, answer: Any, expected: int) -> list[float]:
        """Each passage's score from `[{index, score}, ...]` in any order, every index
        answered once."""
        service = self.service
        items = answer.get(service.results) if isinstance(answer, dict) else None
        scores: dict[int, float] = {}
        try:
            for item in items if isinstance(items, list) else []:
                index = int(item["index"])
                if index in scores or not 0 <= index < expected:
                    raise ValueError(f"index {index}")
                scores[index] = float(item[service.score_field])
        except (KeyError, TypeError, ValueError) as exc:
            raise RerankError(
                f"{self.endpoint} answered an unreadable `{service.results}` ({exc})",
                fix=_BASE_URL_FIX,
            ) from exc
        if len(scores) != expected:
            raise RerankError(
                f"{self.endpoint} scored {len(scores)} of {expected} passages", fix=_BASE_URL_FIX
            )
        return [scores[index] for index in range(expected)]

    def _fix(self, exc: EmbeddingError) -> str:
        if isinstance(exc, EmbeddingAuthError):
            return _key_fix(self.service)
        if isinstance(exc, EmbeddingUnavailable):  # no credentials, no region: its own fix
            return exc.fix
        if isinstance(exc, EmbeddingConnectionError):
            return "check memory.search.rerank.remote.baseUrl and the network"
        return "check memory.search.rerank.model and memory.search.rerank.remote.baseUrl"

    def close(self) -> None:
        self._transport.close()


def remote_scorer(settings: RerankSettings) -> ServiceReranker:
    """The rerank service the settings name, with its key and address (a RerankError
    with the fix when one is missing)."""
    service = SERVICES[settings.provider]
    remote = settings.remote
    model = settings.model or service.default_model
    if service.id == "bedrock":
        return _bedrock(service, model, remote.base_url)
    base_url = remote.base_url or service.base_url
    if not base_url:
        raise RerankError(
            f"the {service.label} reranker needs the server's address",
            fix="set memory.search.rerank.remote.baseUrl (e.g. http://127.0.0.1:8080)",
        )
    api_key = remote.api_key or next(
        (os.environ[name] for name in service.key_env if os.environ.get(name)), ""
    )
    if service.key_env and not api_key:
        raise RerankError(f"no API key for the {service.label} reranker", fix=_key_fix(service))
    return ServiceReranker(service, base_url=base_url, model=model, api_key=api_key)


def _endpoint(service: RerankService, base_url: str) -> str:
    base = base_url.rstrip("/")
    if service.id == "llama-cpp" and not base.endswith("/v1"):
        base += "/v1"
    return f"{base}/rerank"


def _key_fix(service: RerankService) -> str:
    if service.id == "bedrock":
        from apus.embed.bedrock import CREDENTIALS_FIX

        return CREDENTIALS_FIX
    names = " or ".join(service.key_env) or "the key the server expects"
    return f"set memory.search.rerank.remote.apiKey (or {names})"


def _bedrock(service: RerankService, model: str, base_url: str) -> ServiceReranker:
    """Bedrock's Rerank API (bedrock-agent-runtime), signed with SigV4 like the embedding
    provider; the model is named by its ARN in the region."""
    from apus.embed.base import EmbeddingUnavailable, register_secret
    from apus.embed.bedrock import BedrockSigner, region_for

    try:
        region = region_for(base_url)
    except EmbeddingUnavailable as exc:
        raise RerankError(exc.reason, fix=exc.fix) from exc
    arn = (
        model if model.startswith("arn:") else f"arn:aws:bedrock:{region}::foundation-model/{model}"
    )

    def body(query: str, passages: list[str]) -> dict[str, Any]:
        return {
            "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
            "sources": [
                {
                    "type": "INLINE",
                    "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": passage}},
                }
                for passage in passages
            ],
            "rerankingConfiguration": {
                "type": "BEDROCK_RERANKING_MODEL",
                "bedrockRerankingConfiguration": {
                    "modelConfiguration": {"modelArn": arn},
                    "numberOfResults": len(passages),
                },
            },
        }

    url = base_url or f"https://bedrock-agent-runtime.{region}.amazonaws.com"
    signer = BedrockSigner(region, register_secret)
    return ServiceReranker(service, base_url=url, model=model, body=body, sign=signer.sign)
