"""Path tiers from the table of every path's words are the tiers `QueryPath.tier` gives."""

from __future__ import annotations

import itertools
import unicodedata

from apus.search.path_words import PathWords, path_tiers
from apus.search.ranking import PathTier, QueryPath

PATHS = [
    "projects/home-network.md",
    "MEMORY.md",
    "notes/Café Crème.md",
    unicodedata.normalize("NFD", "notes/café crème.md"),
    "Straße.md",
    "a.b/c.md",
    "x/.hidden",
    "lab-k3s/notes.txt",
    "日本語/東京.md",
    "./x.md",
    "pages.zh/common/git.md",
    "a\\b.md",
    " spaced .md",
]
QUERIES = [
    "network", "projects/home", "home network", "or", "md", "netw", "memory.md", "memory",
    "café crème.md", "cafe creme", "CREME", "STRASSE", "c", "c.md", "a.b", "hidden", ".hidden",
    "lab-k3s", "ab-k3", "notes", "東京", "日本", "git", "zh", "pages.zh", "x.md", "b.md",
    "a\\b.md", "spaced", "", "a", "--", "git md",
]  # fmt: skip


def test_the_table_tiers_every_path_as_the_query_does() -> None:
    table = PathWords(enumerate(PATHS))
    candidates = list(enumerate(PATHS))
    for query in QUERIES:
        parsed = QueryPath.of(query)
        assert path_tiers(parsed, candidates, table) == [parsed.tier(p) for p in PATHS], query


def test_a_path_indexed_after_the_table_is_tiered_from_its_path() -> None:
    table = PathWords([(1, "old.md")])
    tiers = path_tiers(QueryPath.of("new"), [(1, "old.md"), (2, "new.md")], table)
    assert tiers == [PathTier.NONE, PathTier.STEM]


def test_every_tier_is_reached() -> None:
    table = PathWords(enumerate(PATHS))
    found = {
        tier
        for query, path in itertools.product(QUERIES, PATHS)
        for tier in path_tiers(QueryPath.of(query), [(PATHS.index(path), path)], table)
    }
    assert found == set(PathTier)
