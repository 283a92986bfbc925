"""Task prefixes per model family, and family detection from names and GGUF metadata."""

from __future__ import annotations

import pytest

from apus.embed.prefixes import detect_family, scheme_for_family


@pytest.mark.parametrize(
    ("family", "query", "document", "untitled"),
    [
        (
            "embeddinggemma",
            "task: search result | query: where is the garden plan",
            "title: Garden | text: Plant tomatoes in May.",
            "title: none | text: Plant tomatoes in May.",
        ),
        (
            "qwen3-embedding",
            "Instruct: Retrieve relevant documents for the given query\n"
            "Query: where is the garden plan",
            "Plant tomatoes in May.",
            "Plant tomatoes in May.",
        ),
        (
            "nomic",
            "search_query: where is the garden plan",
            "search_document: Plant tomatoes in May.",
            "search_document: Plant tomatoes in May.",
        ),
        (
            "e5",
            "query: where is the garden plan",
            "passage: Plant tomatoes in May.",
            "passage: Plant tomatoes in May.",
        ),
        ("none", "where is the garden plan", "Plant tomatoes in May.", "Plant tomatoes in May."),
    ],
)
def test_each_family_writes_its_exact_strings(
    family: str, query: str, document: str, untitled: str
) -> None:
    scheme = scheme_for_family(family)
    assert scheme.apply_query("where is the garden plan") == query
    assert scheme.apply_document("Plant tomatoes in May.", "Garden") == document
    assert scheme.apply_document("Plant tomatoes in May.", None) == untitled
    assert scheme.label == f"{family}@1"


def test_braces_in_user_text_are_not_templates() -> None:
    scheme = scheme_for_family("embeddinggemma")
    assert scheme.apply_query("{query} {0}") == "task: search result | query: {query} {0}"
    assert scheme.apply_document("a {text}", "{title}") == "title: {title} | text: a {text}"


def test_unknown_scheme_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="embeddinggemma"):
        scheme_for_family("word2vec")
    assert scheme_for_family(" EmbeddingGemma ").name == "embeddinggemma"


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("embeddinggemma-300m", "embeddinggemma"),
        ("google/EmbeddingGemma-300m", "embeddinggemma"),
        ("Qwen3-Embedding-0.6B", "qwen3-embedding"),
        ("qwen3-embedding:0.6b", "qwen3-embedding"),
        ("Qwen3-0.6B", "none"),
        ("nomic-embed-text-v1.5", "nomic"),
        ("intfloat/multilingual-e5-small", "e5"),
        ("e5-large-v2", "e5"),
        ("bge-m3-e5f6", "none"),
        ("text-embedding-3-small", "none"),
    ],
)
def test_family_from_model_name(name: str, family: str) -> None:
    assert detect_family(name) == family


@pytest.mark.parametrize(
    ("metadata", "family"),
    [
        ({"general.architecture": "gemma-embedding", "general.name": "x"}, "embeddinggemma"),
        ({"general.architecture": "bert", "general.name": "tiny-embeddinggemma"}, "embeddinggemma"),
        (
            {"general.architecture": "qwen3", "general.basename": "Qwen3-Embedding"},
            "qwen3-embedding",
        ),
        ({"general.architecture": "nomic-bert", "general.name": "nomic-embed-text-v1.5"}, "nomic"),
        ({"general.architecture": "bert", "general.name": "MiniLM L6 H384 Uncased"}, "none"),
    ],
)
def test_family_from_gguf_metadata(metadata: dict[str, str], family: str) -> None:
    assert detect_family(metadata) == family
