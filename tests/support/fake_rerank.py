"""Rerank services on 127.0.0.1 for protocol tests: llama.cpp's `/v1/rerank`, Jina, Voyage,
Cohere (`/rerank`) and Bedrock's Rerank API, each answering in its own shape, best first
(never in the order asked), scripted failures first and, when `hold` is cleared, an answer
kept back until the test lets it go."""

from __future__ import annotations

import threading
from typing import Any

from support.fake_apis import BedrockFake
from support.fake_service import FakeService, Recorded, Reply

GOOD = ("lighthouse", "keeper", "granite")
BAD = ("gravel", "shed")


def relevance(text: str) -> float:
    """What the fake services think of a passage: its good words less its bad ones."""
    words = text.lower().split()
    return float(sum(word in GOOD for word in words) - sum(word in BAD for word in words))


def best_first(documents: list[str]) -> list[tuple[int, float]]:
    scored = [(index, relevance(text)) for index, text in enumerate(documents)]
    return sorted(scored, key=lambda item: -item[1])


class RerankFake(FakeService):
    """`shape`: "llama-cpp", "jina", "voyage" or "cohere"; `key`: the bearer token wanted
    ("" for none)."""

    def __init__(self, shape: str, key: str = "") -> None:
        super().__init__()
        self.shape = shape
        self.key = key
        self.released = threading.Event()
        self.released.set()

    def hold(self) -> None:
        """Keep the next answers back until `release`."""
        self.released.clear()

    def release(self) -> None:
        self.released.set()

    def answer(self, request: Recorded) -> Reply:
        self.released.wait(timeout=60)
        wanted = "/v1/rerank" if self.shape == "llama-cpp" else "/rerank"
        if request.method != "POST" or not request.path.endswith(wanted):
            return Reply(404, {"error": {"message": f"no route {request.path}"}})
        if self.key and request.headers.get("authorization") != f"Bearer {self.key}":
            return Reply(401, {"error": {"message": "invalid api key"}})
        ranked = best_first(request.body["documents"])
        items = [{"index": index, "relevance_score": score} for index, score in ranked]
        return Reply(200, {"data" if self.shape == "voyage" else "results": items})


class BedrockRerankFake(BedrockFake):
    """POST /rerank of bedrock-agent-runtime, refused unless the SigV4 signature verifies."""

    def answer(self, request: Recorded) -> Reply:
        refusal = self._check_signature(request)
        if refusal is not None:
            return refusal
        if request.method != "POST" or request.path != "/rerank":
            return Reply(404, {"message": f"no route {request.path}"})
        body: dict[str, Any] = request.body
        texts = [
            source["inlineDocumentSource"]["textDocument"]["text"] for source in body["sources"]
        ]
        ranked = best_first(texts)
        results = [{"index": index, "relevanceScore": score} for index, score in ranked]
        return Reply(200, {"results": results})
