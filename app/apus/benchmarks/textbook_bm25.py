"""A textbook BM25, the yardstick `apus eval` prints beside the product's keyword leg.

Deliberately plain and apart from the product's search path: one document is title + text,
tokens are lowercase `\\w+` runs (no stemming, no stop words), each distinct query token
counts once, Lucene's IDF, k1 0.9 and b 0.4 (the parameters of the published BM25
baselines on BEIR). On SciFact train it scores nDCG@10 0.668.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping

_TOKEN_RE = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


class TextbookBm25:
    """BM25 over `documents` (id -> text), held in memory."""

    def __init__(self, documents: Mapping[str, str], k1: float = 0.9, b: float = 0.4) -> None:
        self.k1, self.b = k1, b
        self._postings: dict[str, list[tuple[str, int]]] = {}
        self._length: dict[str, int] = {}
        for doc_id, text in documents.items():
            words = tokens(text)
            self._length[doc_id] = len(words)
            for word, count in Counter(words).items():
                self._postings.setdefault(word, []).append((doc_id, count))
        self._average = sum(self._length.values()) / max(len(self._length), 1)

    def scores(self, query: str) -> dict[str, float]:
        """Each matching document's score for `query`."""
        count = len(self._length)
        scores: dict[str, float] = {}
        for word in dict.fromkeys(tokens(query)):
            postings = self._postings.get(word, [])
            idf = math.log(1 + (count - len(postings) + 0.5) / (len(postings) + 0.5))
            for doc_id, tf in postings:
                norm = self.k1 * (1 - self.b + self.b * self._length[doc_id] / self._average)
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (self.k1 + 1) / (tf + norm)
        return scores

    def search(self, query: str, limit: int) -> list[str]:
        """The ids of the best `limit` documents, best first (ties by id)."""
        scores = self.scores(query)
        return sorted(scores, key=lambda doc_id: (-scores[doc_id], doc_id))[:limit]
