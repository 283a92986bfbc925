"""The words of every indexed path, as word -> the notes whose path holds it: built once per
store generation, so tiering a search's candidates looks their paths' words up (for all of
them at once) instead of tokenising each path."""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from apus.index.sorted_ids import holds, sorted_unique
from apus.search.ranking import PathTier, QueryPath, normalise_path, path_words
from apus.vault.text import tokenize

_NO_FILES = np.zeros(0, dtype=np.int64)


class PathWords:
    """Sorted file ids per folded path word: `stem` for the words of a path without its
    extension (what a partial tier matches), `extension` for those of the extension alone;
    both together are the words of the whole path."""

    def __init__(self, files: Iterable[tuple[int, str]]) -> None:
        self._paths = dict(files)
        stem: dict[str, list[int]] = {}
        extension: dict[str, list[int]] = {}
        for file_id, path in self._paths.items():
            stem_words, extension_words = _words_of(path)
            for word in stem_words:
                stem.setdefault(word, []).append(file_id)
            for word in extension_words:
                extension.setdefault(word, []).append(file_id)
        self._known = _sorted(list(self._paths))
        self._stem = {word: _sorted(ids) for word, ids in stem.items()}
        self._extension = {word: _sorted(ids) for word, ids in extension.items()}

    def updated(self, files: Iterable[tuple[int, str]]) -> PathWords:
        """The table of `files`, made from this one: only the paths added, removed or moved
        since are read again. After an edit a session pays a pass over the paths, not over
        their words (30 ms instead of 0.3 s at 38k notes). Most of the vault changed (a
        rebuild gives every chunk a new id): built anew."""
        paths = dict(files)
        old = self._paths
        gone = [(i, p) for i, p in old.items() if paths.get(i) != p]
        new = [(i, p) for i, p in paths.items() if old.get(i) != p]
        if len(gone) + len(new) > max(len(paths), 1) // 4:
            return PathWords(paths.items())
        table = object.__new__(PathWords)
        table._paths = paths
        table._known = _sorted(list(paths)) if gone or new else self._known
        table._stem = _changed(self._stem, gone, new, part=0)
        table._extension = _changed(self._extension, gone, new, part=1)
        return table

    @property
    def paths(self) -> Mapping[int, str]:
        """Every file's path when this table was built, by file id."""
        return self._paths

    def known(self, files: np.ndarray) -> np.ndarray:
        """Per file id: was its path indexed when this table was built?"""
        return holds(self._known, files)

    def holding(self, words: Sequence[str], files: np.ndarray, *, whole: bool) -> np.ndarray:
        """Per file id: does its path hold every one of `words`, as words of the path without
        its extension, or (`whole`) of the whole path?"""
        held = np.ones(len(files), dtype=bool)
        for word in words:
            found = holds(self._stem.get(word, _NO_FILES), files)
            if whole:
                found |= holds(self._extension.get(word, _NO_FILES), files)
            held &= found
        return held


def _words_of(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """A path's words without its extension, and what its extension adds ("md")."""
    normal = normalise_path(path)
    words = path_words(normal)
    suffix = posixpath.splitext(normal)[1]
    return frozenset(words), frozenset({token.term for token in tokenize(suffix)} - words)


def _changed(
    table: dict[str, np.ndarray],
    gone: list[tuple[int, str]],
    new: list[tuple[int, str]],
    *,
    part: int,
) -> dict[str, np.ndarray]:
    """`table` (word -> sorted file ids) with the `gone` paths' words taken out and the
    `new` ones' put in; the words no path touched share their arrays with `table`."""
    if not gone and not new:
        return table
    removed: dict[str, list[int]] = {}
    added: dict[str, list[int]] = {}
    for file_id, path in gone:
        for word in _words_of(path)[part]:
            removed.setdefault(word, []).append(file_id)
    for file_id, path in new:
        for word in _words_of(path)[part]:
            added.setdefault(word, []).append(file_id)
    result = dict(table)
    for word in removed.keys() | added.keys():
        ids = result.get(word, _NO_FILES)
        if word in removed:
            ids = ids[~holds(_sorted(removed[word]), ids)]
        if word in added:
            ids = sorted_unique(np.concatenate([ids, np.asarray(added[word], dtype=np.int64)]))
        if len(ids):
            result[word] = ids
        else:
            result.pop(word, None)
    return result


def _sorted(ids: list[int]) -> np.ndarray:
    return sorted_unique(np.asarray(ids, dtype=np.int64))


def path_tiers(
    query: QueryPath, files: np.ndarray, paths: Mapping[int, str], table: PathWords | None
) -> list[PathTier]:
    """`query.tier(path)` of each candidate note (`files`: int64 file ids; `paths`: the path
    of each), the paths' words looked up in `table` for all of them at once. Every tier
    needs each query word among the words of the whole path (or, with a separator in the
    query, the query inside the path), so the rest are NONE without their paths being
    read."""
    file_list: list[int] = files.tolist()
    if table is None or not query.form:
        return [query.tier(paths[file_id]) for file_id in file_list]
    # As lists: one Python value each, not a numpy scalar made at every index.
    known = table.known(files).tolist()
    in_whole = table.holding(query.words, files, whole=True).tolist()
    in_stem = table.holding(query.words, files, whole=False).tolist()
    tiers = [PathTier.NONE] * len(file_list)
    for index, file_id in enumerate(file_list):
        if not known[index]:  # indexed since the table was built
            tiers[index] = query.tier(paths[file_id])
        elif in_whole[index] or query.has_separator:
            held = functools.partial(bool, in_stem[index])
            tiers[index] = query.tier_of_normalised(normalise_path(paths[file_id]), held)
    return tiers
