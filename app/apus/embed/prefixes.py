"""Task-prefix schemes per model family, applied whichever provider serves the model."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PrefixScheme:
    """How a family wants queries and documents written before they are embedded.

    `version` changes whenever a template changes, so an index built with the old strings is
    rebuilt (the identity records `name@version`).
    """

    name: str
    version: int
    query_template: str
    document_template: str

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    def apply_query(self, query: str) -> str:
        return self.query_template.format(query=query)

    def apply_document(self, text: str, title: str | None) -> str:
        return self.document_template.format(text=text, title=title or "none")


SCHEMES: dict[str, PrefixScheme] = {
    scheme.name: scheme
    for scheme in (
        # The model card's retrieval prompts; the document title falls back to "none".
        PrefixScheme(
            "embeddinggemma",
            1,
            "task: search result | query: {query}",
            "title: {title} | text: {text}",
        ),
        # Qwen3-Embedding instructs queries only; documents go in as they are.
        PrefixScheme(
            "qwen3-embedding",
            1,
            "Instruct: Retrieve relevant documents for the given query\nQuery: {query}",
            "{text}",
        ),
        PrefixScheme("nomic", 1, "search_query: {query}", "search_document: {text}"),
        PrefixScheme("e5", 1, "query: {query}", "passage: {text}"),
        PrefixScheme("none", 1, "{query}", "{text}"),
    )
}


def scheme_for_family(name: str) -> PrefixScheme:
    """The scheme called `name` (case-insensitive); ValueError lists the known ones."""
    key = name.strip().lower()
    if key not in SCHEMES:
        known = ", ".join(sorted(SCHEMES))
        raise ValueError(f"unknown prefix scheme {name!r} (known: {known})")
    return SCHEMES[key]


_E5_TOKEN = re.compile(r"(?:^|[^a-z0-9])e5(?:[^a-z0-9]|$)")
_NAME_KEYS = ("general.name", "general.basename", "general.base_model.0.name")


def detect_family(model_name_or_gguf_metadata: str | Mapping[str, Any]) -> str:
    """The prefix family of a model, from its name or from GGUF metadata ("none" if unknown)."""
    if isinstance(model_name_or_gguf_metadata, str):
        names = [model_name_or_gguf_metadata]
        architecture = ""
    else:
        metadata = model_name_or_gguf_metadata
        architecture = str(metadata.get("general.architecture", "")).lower()
        names = [str(metadata[key]) for key in _NAME_KEYS if metadata.get(key)]
    if architecture == "gemma-embedding":
        return "embeddinggemma"
    joined = " ".join([architecture, *names]).lower()
    if "embeddinggemma" in joined or "embedding-gemma" in joined:
        return "embeddinggemma"
    if "qwen3" in joined and "embed" in joined:
        return "qwen3-embedding"
    if "nomic" in joined:
        return "nomic"
    # "e5" only as its own token ("multilingual-e5-small"), never inside a hash or word.
    if _E5_TOKEN.search(joined):
        return "e5"
    return "none"


class PrefixedTexts:
    """The Embedder's `query_text`/`document_text`, from its model family's scheme."""

    _scheme: PrefixScheme

    def query_text(self, query: str) -> str:
        return self._scheme.apply_query(query)

    def document_text(self, text: str, title: str | None) -> str:
        return self._scheme.apply_document(text, title)
