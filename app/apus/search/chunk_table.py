"""What ranking weighs each chunk by: its note, the note's path, date and importance, and an
annotation's importance. A search's hundreds of candidates are weighed from a table of every
chunk, built once per store generation (`ChunkTable`), or, at a generation's first search
(a one-shot command's only one), from the store, candidate by candidate; only the hits
shown are read whole."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from apus.index.sorted_ids import holds, positions_in
from apus.index.store import ChunkFacts, Store
from apus.search.options import ResolvedOptions
from apus.search.ranking import (
    importance_factor,
    recency_factor,
    recency_weight,
)
from apus.vault.annotations import annotations_in
from apus.vault.memory_notes import MEMORY_FILES

# A note's date and importance, for the notes that have either.
_DateAndImportance = tuple[str | None, float | None]
# What weighs a candidate otherwise than a plain note: its note's date and importance, and
# the text of the chunk when it holds an annotation.
_Marks = tuple[str | None, float | None, str | None]


@dataclass(frozen=True)
class Candidates:
    """The chunks of one ranking that are still stored, in the order asked for."""

    ids: list[int]
    files: np.ndarray  # int64: each chunk's note
    paths: Mapping[int, str]  # file id -> path, for every note of `files`
    # Only the candidates weighed otherwise than a plain note (`_Marks`), by position.
    marked: dict[int, _Marks]
    languages: Mapping[int, str] = field(default_factory=dict)  # file id -> language, if known

    def only(self, positions: list[int]) -> Candidates:
        """These candidates alone, in the order of `positions`."""
        marked = {new: self.marked[old] for new, old in enumerate(positions) if old in self.marked}
        ids = [self.ids[old] for old in positions]
        files = self.files[np.asarray(positions, dtype=np.int64)]
        return Candidates(ids, files, self.paths, marked, self.languages)


@dataclass(frozen=True)
class Weights:
    """Per candidate: its note's decay (`recency`), what that decay multiplies its score by,
    its importance multiplier, its language factor and its curated memory's weight."""

    recency: np.ndarray
    recency_weight: np.ndarray
    importance: np.ndarray
    language: np.ndarray | None = None  # `language_weights`, once relevance is known
    curated: np.ndarray | None = None  # curatedWeight for the agent's own memory, else 1

    def only(self, positions: np.ndarray) -> Weights:
        language = None if self.language is None else self.language[positions]
        curated = None if self.curated is None else self.curated[positions]
        return Weights(
            self.recency[positions],
            self.recency_weight[positions],
            self.importance[positions],
            language,
            curated,
        )


class ChunkTable:
    """Every stored chunk's note and the notes' paths, and the dates, importances and
    annotations ranking reads, as of one store generation (`read` in one snapshot)."""

    def __init__(
        self,
        ids: np.ndarray,
        files: np.ndarray,
        paths: Mapping[int, str],
        notes: dict[int, _DateAndImportance],
        annotated: dict[int, str],
        languages: Mapping[int, str] | None = None,
    ) -> None:
        self._ids = ids  # ascending
        self._files = files
        self._paths = paths
        self._notes = notes
        self._annotated = annotated
        self._languages = languages or {}
        self._marked_files = np.asarray(sorted(notes), dtype=np.int64)
        self._annotated_ids = np.asarray(sorted(annotated), dtype=np.int64)

    @classmethod
    def read(cls, store: Store, paths: Mapping[int, str]) -> ChunkTable:
        """The table of the store as it is now, with its files' `paths` read in the same
        snapshot (about 65 ms at 118k chunks)."""
        ids, files = store.chunk_files()
        notes = {int(row[0]): (row[1], row[2]) for row in store.file_facts()}
        return cls(ids, files, paths, notes, store.annotated_chunks(), store.file_languages())

    def candidates(
        self, ids: Sequence[int], read: Callable[[list[int]], list[ChunkFacts]]
    ) -> Candidates:
        """The candidates `ids` from the table; those it lacks (stored since it was built,
        or gone) are `read` from the store."""
        asked = np.asarray(ids, dtype=np.int64)
        files = self._files_of(asked)
        if (files < 0).any():
            return self._with_unknown(ids, files.tolist(), read)
        marked = holds(self._marked_files, files) | holds(self._annotated_ids, asked)
        file_list: list[int] = files.tolist()
        marks = {
            position: self._marks(ids[position], file_list[position])
            for position in np.flatnonzero(marked).tolist()
        }
        return Candidates(list(ids), files, self._paths, marks, self._languages)

    def _marks(self, chunk_id: int, file_id: int) -> _Marks:
        return (*self._notes.get(file_id, (None, None)), self._annotated.get(chunk_id))

    def _with_unknown(
        self, ids: Sequence[int], files: list[int], read: Callable[[list[int]], list[ChunkFacts]]
    ) -> Candidates:
        """`candidates` when some are not in the table: those are read from the store, and
        those the store lacks too are gone."""
        missing = [chunk_id for chunk_id, file_id in zip(ids, files, strict=True) if file_id < 0]
        late = {facts.id: facts for facts in read(missing)}
        found = _Found(self._paths, self._languages)
        for chunk_id, file_id in zip(ids, files, strict=True):
            if file_id >= 0:
                found.add(chunk_id, file_id, self._marks(chunk_id, file_id))
            elif chunk_id in late:
                found.add_facts(late[chunk_id])
        return found.candidates()

    def _files_of(self, ids: np.ndarray) -> np.ndarray:
        """Each chunk's file id; -1 for a chunk the table does not hold."""
        if not len(self._ids):
            return np.full(len(ids), -1, dtype=np.int64)
        at = positions_in(self._ids, ids)
        files: np.ndarray = np.where(at >= 0, self._files[at], -1)
        return files


class _Found:
    """Candidates gathered one by one, in order."""

    def __init__(
        self, paths: Mapping[int, str] | None = None, languages: Mapping[int, str] | None = None
    ) -> None:
        self.ids: list[int] = []
        self.files: list[int] = []
        self.known_paths = paths
        self.paths: dict[int, str] = {}  # those `known_paths` lacks
        self.marked: dict[int, _Marks] = {}
        self.languages = dict(languages or {})

    def add(self, chunk_id: int, file_id: int, marks: _Marks) -> None:
        if any(value is not None for value in marks):
            self.marked[len(self.ids)] = marks
        self.ids.append(chunk_id)
        self.files.append(file_id)

    def add_facts(self, facts: ChunkFacts) -> None:
        self.add(facts.id, facts.file_id, (facts.note_date, facts.importance, facts.annotated))
        self.paths[facts.file_id] = facts.path
        if facts.lang is not None:
            self.languages[facts.file_id] = facts.lang

    def candidates(self) -> Candidates:
        paths = self.paths
        known = self.known_paths
        if known is not None:
            paths = {file_id: known[file_id] for file_id in self.files if file_id in known} | paths
        files = np.asarray(self.files, dtype=np.int64)
        return Candidates(self.ids, files, paths, self.marked, self.languages)


def read_candidates(ids: Sequence[int], facts: Mapping[int, ChunkFacts]) -> Candidates:
    """The candidates `ids` from their facts read from the store (a missing one is gone)."""
    found = _Found()
    for chunk_id in ids:
        chunk = facts.get(chunk_id)
        if chunk is not None:
            found.add_facts(chunk)
    return found.candidates()


def weigh(candidates: Candidates, options: ResolvedOptions, today: dt.date) -> Weights:
    """Each candidate's recency and importance: a plain note's (no date, no importance, no
    annotation) for all, then those of the marked ones, each date's figured once."""
    count = len(candidates.ids)
    plain_recency = recency_factor(None, today, options.half_life_days, options.recency)
    recency = np.full(count, plain_recency, dtype=np.float64)
    weight = np.full(count, recency_weight(plain_recency, options.recency_floor))
    importance = np.full(count, importance_factor(None), dtype=np.float64)
    by_date: dict[str, tuple[float, float]] = {}
    for position, (note_date, note_importance, annotated) in candidates.marked.items():
        if note_date:
            figured = by_date.get(note_date)
            if figured is None:
                decay = recency_factor(
                    dt.date.fromisoformat(note_date),
                    today,
                    options.half_life_days,
                    options.recency,
                )
                figured = by_date[note_date] = (decay, recency_weight(decay, options.recency_floor))
            recency[position], weight[position] = figured
        # An entry's own annotation speaks for its passage before the note's.
        own = annotations_in(annotated).importance if annotated else None
        importance[position] = importance_factor(own or note_importance)
    curated = np.ones(count, dtype=np.float64)
    if options.curated_weight != 1.0 and count:
        curated[_curated(candidates)] = options.curated_weight
    return Weights(recency, weight, importance, curated=curated)


def _curated(candidates: Candidates) -> np.ndarray:
    """Which candidates are the agent's own word: passages of MEMORY.md and USER.md, and
    entries annotated with an importance or triggers (what the write tool writes)."""
    files: list[int] = candidates.files.tolist()
    memory = {f for f in set(files) if candidates.paths.get(f) in MEMORY_FILES}
    curated = np.fromiter((f in memory for f in files), dtype=bool, count=len(files))
    for position, (_date, _importance, annotated) in candidates.marked.items():
        if annotated is not None:
            curated[position] = True
    return curated


def language_weights(candidates: Candidates, relevance: np.ndarray, weight: float) -> np.ndarray:
    """What each candidate is multiplied by for its language: `weight` for a note in another
    language than the query's, 1 otherwise (and for every note when the candidates are in one
    language, or `weight` is 1). The query's language is the one most of the candidates'
    relevance is in: its words find the notes written in it."""
    count = len(candidates.ids)
    weights = np.ones(count, dtype=np.float64)
    languages = candidates.languages
    if weight == 1.0 or not languages or not count:
        return weights
    of = [languages.get(file_id) for file_id in candidates.files.tolist()]
    mass: dict[str, float] = {}
    for language, score in zip(of, relevance.tolist(), strict=True):
        if language is not None:
            mass[language] = mass.get(language, 0.0) + score
    if len(mass) < 2:
        return weights
    query = max(mass, key=mass.__getitem__)
    for position, language in enumerate(of):
        if language is not None and language != query:
            weights[position] = weight
    return weights
