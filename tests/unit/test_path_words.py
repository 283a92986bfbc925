"""Path tiers from the table of every path's words are the tiers `QueryPath.tier` gives."""

from __future__ import annotations

import itertools
import unicodedata

import numpy as np

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
    for query in QUERIES:
        parsed = QueryPath.of(query)
        expected = [parsed.tier(p) for p in PATHS]
        assert _tiers(parsed, list(enumerate(PATHS)), table) == expected, query
        assert _tiers(parsed, list(enumerate(PATHS)), None) == expected, query


def test_a_path_indexed_after_the_table_is_tiered_from_its_path() -> None:
    table = PathWords([(1, "old.md")])
    tiers = _tiers(QueryPath.of("new"), [(1, "old.md"), (2, "new.md")], table)
    assert tiers == [PathTier.NONE, PathTier.STEM]


def test_every_tier_is_reached() -> None:
    table = PathWords(enumerate(PATHS))
    found = {
        tier
        for query, path in itertools.product(QUERIES, PATHS)
        for tier in _tiers(QueryPath.of(query), [(PATHS.index(path), path)], table)
    }
    assert found == set(PathTier)


def test_a_table_brought_up_to_date_tiers_as_one_built_anew() -> None:
    # Enough untouched paths that the change is a small part of the vault: updated, not rebuilt.
    before = list(enumerate(PATHS + [f"archive/page-{n}.md" for n in range(40)]))
    # Removed (0, 4), moved (1 keeps its id, 3 gets another's words), added (20, 21).
    after = [(i, p) for i, p in before if i not in (0, 4)]
    after = [(i, "notes/network plan.md" if i == 1 else p) for i, p in after]
    after = [(i, "Straße/MEMORY.md" if i == 3 else p) for i, p in after]
    after += [(90, "projects/home-lab.md"), (91, "日本語/大阪.txt")]
    old = PathWords(before)
    updated = old.updated(after)
    fresh = PathWords(after)
    assert updated._stem["page"] is old._stem["page"]  # untouched words are shared: updated
    ids = np.arange(-1, 100, dtype=np.int64)
    assert (updated.known(ids) == fresh.known(ids)).all()
    for query in [*QUERIES, "plan", "home-lab", "大阪", "txt", "straße memory", "page-7"]:
        parsed = QueryPath.of(query)
        expected = [parsed.tier(p) for _, p in after]
        assert _tiers(parsed, after, updated) == expected, query
        assert _tiers(parsed, after, fresh) == expected, query


def test_a_table_whose_vault_mostly_changed_is_built_anew() -> None:
    # A rebuild gives every file a new id: nothing of the old table is kept.
    old = PathWords(enumerate(PATHS))
    renumbered = [(i + 100, p) for i, p in enumerate(PATHS)]
    table = old.updated(renumbered)
    assert not table.known(np.arange(len(PATHS), dtype=np.int64)).any()
    assert table.known(np.arange(100, 100 + len(PATHS), dtype=np.int64)).all()


def _tiers(
    query: QueryPath, candidates: list[tuple[int, str]], table: PathWords | None
) -> list[PathTier]:
    """`path_tiers` of (file id, path) pairs."""
    files = np.asarray([file_id for file_id, _ in candidates], dtype=np.int64)
    return path_tiers(query, files, dict(candidates), table)
