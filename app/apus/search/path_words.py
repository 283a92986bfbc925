"""The words of every indexed path, as word -> the notes whose path holds it: built once per
store generation, so tiering a search's candidates looks their paths' words up (for all of
them at once) instead of tokenising each path."""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Iterable, Sequence

import numpy as np

from apus.index.bm25 import sorted_unique
from apus.search.ranking import PathTier, QueryPath, normalise_path, path_words
from apus.vault.text import tokenize

_NO_FILES = np.zeros(0, dtype=np.int64)


class PathWords:
    """Sorted file ids per folded path word: `stem` for the words of a path without its
    extension (what a partial tier matches), `extension` for those of the extension alone;
    both together are the words of the whole path."""

    def __init__(self, files: Iterable[tuple[int, str]]) -> None:
        stem: dict[str, list[int]] = {}
        extension: dict[str, list[int]] = {}
        known: list[int] = []
        for file_id, path in files:
            known.append(file_id)
            normal = normalise_path(path)
            words = path_words(normal)
            for word in words:
                stem.setdefault(word, []).append(file_id)
            # What the extension adds ("md"): the rest of the whole path's words.
            suffix = posixpath.splitext(normal)[1]
            for word in {token.term for token in tokenize(suffix)} - words:
                extension.setdefault(word, []).append(file_id)
        self._known = _sorted(known)
        self._stem = {word: _sorted(ids) for word, ids in stem.items()}
        self._extension = {word: _sorted(ids) for word, ids in extension.items()}

    def known(self, files: np.ndarray) -> np.ndarray:
        """Per file id: was its path indexed when this table was built?"""
        return _holds(self._known, files)

    def holding(self, words: Sequence[str], files: np.ndarray, *, whole: bool) -> np.ndarray:
        """Per file id: does its path hold every one of `words`, as words of the path without
        its extension, or (`whole`) of the whole path?"""
        held = np.ones(len(files), dtype=bool)
        for word in words:
            found = _holds(self._stem.get(word, _NO_FILES), files)
            if whole:
                found |= _holds(self._extension.get(word, _NO_FILES), files)
            held &= found
        return held


def _sorted(ids: list[int]) -> np.ndarray:
    return sorted_unique(np.asarray(ids, dtype=np.int64))


def _holds(sorted_ids: np.ndarray, files: np.ndarray) -> np.ndarray:
    """Per entry of `files`: is it in `sorted_ids`?"""
    if not len(sorted_ids):
        return np.zeros(len(files), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_ids, files), len(sorted_ids) - 1)
    found: np.ndarray = sorted_ids[at] == files
    return found


def path_tiers(
    query: QueryPath, candidates: Sequence[tuple[int, str]], table: PathWords | None
) -> list[PathTier]:
    """`query.tier(path)` of each candidate (file id, path), the paths' words looked up in
    `table` for all of them at once. Every tier needs each query word among the words of the
    whole path (or, with a separator in the query, the query inside the path), so the rest
    are NONE without their paths being read."""
    if table is None or not query.form:
        return [query.tier(path) for _, path in candidates]
    files = np.fromiter((file_id for file_id, _ in candidates), np.int64, len(candidates))
    known = table.known(files)
    in_whole = table.holding(query.words, files, whole=True)
    in_stem = table.holding(query.words, files, whole=False)
    tiers: list[PathTier] = []
    for index, (_, path) in enumerate(candidates):
        if not known[index]:  # indexed since the table was built
            tiers.append(query.tier(path))
        elif not (in_whole[index] or query.has_separator):
            tiers.append(PathTier.NONE)
        else:
            held = functools.partial(bool, in_stem[index])
            tiers.append(query.tier_of_normalised(normalise_path(path), held))
    return tiers
