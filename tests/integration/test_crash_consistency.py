"""Crash consistency: `apus memory index` SIGKILLed at random points, then run again, gives
exactly the index a clean run gives.

Twenty kills of a real `apus memory index` subprocess on a vault of a few hundred notes, of
four kinds, taken in turn:

- a first index with the tiny real GGUF behind the managed server, from an empty index
  folder (the kill lands in the keyword batches or, mostly, in the embedding step);
- `--force` on a complete index with the same model (scan, shadow store, keyword build,
  embedding from the cache, FAISS, the swap);
- an incremental index after edits (20 notes changed, 10 deleted, 10 renamed, 20 added),
  with the model: batches mirrored into Whoosh, removals, new vectors;
- a first index with embeddings off. Its kills land in the keyword part only, which the
  runs with vectors spend least of their time in; keyword-only runs are quick, so these
  sample that part densely at little cost, and vectors are covered by the other three.

Each kill lands in the work itself, on any machine: the clean run of each kind records the
points of its work (`apus.indexing.holds`: the writer lock taken, each progress event, the work
done); the run to kill is held at one of them drawn at random, let go, and killed a random
part of the way to the next point, where it is held again if it gets there first. So every
kill hits a run that holds the writer lock, mid-work. The run after it (in this process,
through the session, as `apus memory index` runs) must give the clean index of the same
notes: the same files and chunks, a keyword index holding exactly the store's chunks and
stamped with its generation, vectors.faiss holding exactly the store's chunks with the clean
index's vectors, and the same top results for a few queries — after the edits too, since an
index updated in place scores exactly like a clean one
(`test_bm25.py::test_an_index_updated_in_place_scores_like_a_clean_rebuild`).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest
from whoosh import index as whoosh_index

from apus.config import Settings, load_settings
from apus.embed.providers import resolve_provider
from apus.index.identity import stored_identity
from apus.index.keyword import KeywordIndex
from apus.index.store import Store
from apus.index.vectors import VectorIndex
from apus.indexing.shadow import shadow_dir
from apus.memory import Memory
from apus.search.engine import SearchOptions
from support.holds import Hold
from support.tiny_gguf import write_tiny_gguf
from support.vaults import APUS, write_note

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

NOTES = 300
KILLS = 20
SEED = 15
FIRST, FORCE, EDITS, KEYWORD_ONLY = KINDS = (
    "first index",
    "--force",
    "edits",
    "first index, keyword only",
)
QUERIES = ("marker042", "garden coffee", "python model vector", "tree house light", "marker250")
_TEXT = (
    "the a an and or of to in on for with is are was it this that note search garden coffee "
    "python code model vector keyword memory daily week tree house water fire light dark"
)
WORDS = _TEXT.split()

Key = tuple[str, int]  # a chunk by (path, ordinal): ids depend on a store's history


@dataclass
class Snapshot:
    files: dict[str, tuple[Any, ...]]
    chunks: dict[Key, tuple[Any, ...]]
    keyword: set[Key]
    vectors: dict[Key, np.ndarray] | None
    results: dict[str, list[tuple[float, str, int]]]


def _notes() -> dict[str, str]:
    rng = random.Random(SEED)
    notes = {}
    for i in range(NOTES):
        parts = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 90)))
            for _ in range(rng.choice((1, 1, 1, 2)))
        ]
        body = "\n\n## More\n\n".join(parts)
        notes[f"d{i % 10}/note-{i:03d}.md"] = f"# Note {i}\n\n{body}\n\nmarker{i:03d}\n"
    return notes


def _edited(notes: dict[str, str]) -> dict[str, str]:
    """The same vault after a day of work: notes changed, deleted, renamed and added."""
    paths = sorted(notes)
    random.Random(SEED + 1).shuffle(paths)
    edited = dict(notes)
    for rel in paths[:20]:
        edited[rel] = notes[rel] + "\nAn added line about water and fire.\n"
    for rel in paths[20:30]:
        del edited[rel]
    for rel in paths[30:40]:
        edited[f"renamed/{rel}"] = edited.pop(rel)
    for i in range(20):
        edited[f"new/note-{i:02d}.md"] = f"# New {i}\n\nA new note on coffee and trees, new{i}.\n"
    return edited


def _put(vault: Path, notes: dict[str, str]) -> None:
    """Make the vault hold exactly `notes` (files whose text is already right are left alone)."""
    for path in list(vault.rglob("*.md")):
        if path.relative_to(vault).as_posix() not in notes:
            path.unlink()
    for rel, text in notes.items():
        path = vault / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_note(vault, rel, text)


def _env(index_dir: Path, model: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env["APUS_MEMORY__SEARCH__STORE__PATH"] = str(index_dir)
    if model is None:
        env["APUS_MEMORY__SEARCH__PROVIDER"] = "none"
    else:
        env["APUS_MEMORY__SEARCH__PROVIDER"] = "local"
        env["APUS_MEMORY__SEARCH__LOCAL__MODELPATH"] = str(model)
        env["APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE"] = "512"
    return env


def _settings(vault: Path, env: dict[str, str]) -> Settings:
    return load_settings(environ=env, overrides={"vault": str(vault)})


@dataclass
class Target:
    """One index folder of the vault, and how `apus memory index` is run on it."""

    vault: Path
    index_dir: Path
    env: dict[str, str]

    @property
    def settings(self) -> Settings:
        return _settings(self.vault, self.env)

    def start(self, hold: Hold, *args: str, at: int | None = None) -> subprocess.Popen[bytes]:
        # --json: no progress bar, so stderr holds only an error, if any.
        return subprocess.Popen(
            [*APUS, "--vault", str(self.vault), "memory", "index", "--json", *args],
            env={**self.env, **hold.env(at)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def _holds_lock(self, proc: subprocess.Popen[bytes]) -> bool:
        try:
            pid = (self.index_dir / "writer.pid").read_text(encoding="utf-8").strip()
        except OSError:
            return False
        return pid == str(proc.pid)

    def recorded_run(self, hold: Hold, *args: str) -> list[dict[str, Any]]:
        """Run to the end; the points of its work, in order (each with its monotonic time)."""
        proc = self.start(hold, *args)
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr.decode()
        points = hold.events()
        assert points[0]["phase"] == "start" and points[-1]["phase"] == "end", points
        return points

    def killed_run(
        self, hold: Hold, clean: list[dict[str, Any]], at: int, share: float, *args: str
    ) -> bool:
        """Hold a run at point `at`, let it go, and SIGKILL it `share` of the way (in the
        time the `clean` run took) to the next point, where it is held if it gets there
        first. Whether the kill hit the run at work: holding the writer lock, not yet done."""
        gap = clean[at]["t"] - clean[at - 1]["t"]  # clean[at] is point number at + 1
        proc = self.start(hold, *args, at=at)
        try:
            held = hold.wait_held(proc=proc)
            assert held["n"] == at, held
            hold.release(at)
            time.sleep(share * gap)  # where the kill lands between the two points
            working = self._holds_lock(proc) and proc.poll() is None
            proc.kill()
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == -9, stderr.decode()
        return working

    def rerun(self) -> None:
        with Memory(settings=self.settings) as memory:
            report = memory.sync()
        assert not report.cancelled and report.embedding.ok, report.embedding.message()


def _snapshot(settings: Settings, *, vectors: bool) -> Snapshot:
    index_dir = settings.index_dir()
    assert not shadow_dir(index_dir).exists(), "a half-built rebuild was left behind"
    store = Store(index_dir, readonly=True)
    try:
        files = {
            path: (r.size, r.sha256, r.title, r.note_date, r.chunking)
            for path, r in store.files().items()
        }
        key_of: dict[int, Key] = {}
        chunks: dict[Key, tuple[Any, ...]] = {}
        for c in store.iter_chunks():
            key_of[c.id] = (c.path, c.ordinal)
            chunks[(c.path, c.ordinal)] = (c.start_line, c.end_line, c.heading, c.text, c.tokens)
        keyword = _keyword_keys(index_dir, store.generation(), key_of)
        held = _vectors(index_dir, store, key_of) if vectors else None
    finally:
        store.close()
    mode = "hybrid" if vectors else "keyword"
    legs = ("keyword", "vector") if vectors else ("keyword",)
    results: dict[str, list[tuple[float, str, int]]] = {}
    with Memory(settings=settings) as memory:
        for query in QUERIES:
            response = memory.search(query, SearchOptions(mode=mode, limit=10, mmr=False))
            assert all(response.legs[leg].ran for leg in legs), response.legs
            # Equal scores may come in either order: each index numbers its documents.
            results[query] = sorted(
                (-round(h.score, 4), h.path, h.start_line) for h in response.hits
            )
    return Snapshot(files, chunks, keyword, held, results)


def _keyword_keys(index_dir: Path, generation: int, key_of: dict[int, Key]) -> set[Key]:
    state = KeywordIndex(index_dir).state()
    assert state.usable and state.generation == generation, state
    ix = whoosh_index.open_dir(str(index_dir / KeywordIndex.DIRNAME))
    try:
        with ix.searcher() as searcher:
            # The chunk id is a column (read per segment), not a stored field.
            reader = searcher.reader()
            column = reader.column_reader("chunk")
            ids = [int(column[doc]) for doc in reader.all_doc_ids()]
    finally:
        ix.close()
    assert len(ids) == len(set(ids)), "a chunk is in the keyword index twice"
    assert set(ids) == set(key_of), "the keyword index does not hold exactly the store's chunks"
    return {key_of[i] for i in ids}


def _vectors(index_dir: Path, store: Store, key_of: dict[int, Key]) -> dict[Key, np.ndarray]:
    identity = stored_identity(store)
    assert identity is not None, "the vectors' identity was not recorded"
    key = identity.key()
    # "rebuilt" when a run killed after swapping in a forced rebuild's store left FAISS for
    # the next run to rebuild from the store (its stamp says so until it is written again).
    assert VectorIndex(index_dir).health(key).usable
    assert store.vector_chunk_ids(key) == set(key_of), "a chunk has no vector in the store"
    index = faiss.read_index(str(index_dir / VectorIndex.FILENAME))
    held = faiss.vector_to_array(index.id_map).tolist()
    assert sorted(held) == sorted(key_of), "vectors.faiss does not hold exactly the chunks"
    return {key_of[i]: index.reconstruct(i) for i in held}


# Vectors embedded in other batches differ by up to 1e-5 a component (llama.cpp sums in
# batch order; `_differences` allows that much): their scores by as much.
SCORE_TOLERANCE = 1e-4


def _same_results(
    got: dict[str, list[tuple[float, str, int]]], clean: dict[str, list[tuple[float, str, int]]]
) -> bool:
    """The same passages for every query, each with the same score within the tolerance."""
    if set(got) != set(clean):
        return False
    for query, hits in got.items():
        mine = {(path, line): -score for score, path, line in hits}
        theirs = {(path, line): -score for score, path, line in clean[query]}
        if set(mine) != set(theirs):
            return False
        if any(abs(mine[key] - theirs[key]) > SCORE_TOLERANCE for key in mine):
            return False
    return True


def _differences(got: Snapshot, clean: Snapshot, *, results: bool = True) -> list[str]:
    parts = ("files", "chunks", "keyword")
    problems = [part for part in parts if getattr(got, part) != getattr(clean, part)]
    if results and not _same_results(got.results, clean.results):
        problems.append("results")
    if got.vectors is not None:
        assert clean.vectors is not None
        if set(got.vectors) != set(clean.vectors) or any(
            not np.allclose(got.vectors[k], clean.vectors[k], atol=1e-5) for k in got.vectors
        ):
            problems.append("vectors")
    return problems


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("models")
    yield write_tiny_gguf(folder / "tiny-embeddinggemma.gguf", name="tiny-embeddinggemma")


@dataclass
class References:
    """The clean indexes (snapshots) to compare with, and how long each kind of run works."""

    notes: dict[str, str]
    edited: dict[str, str]
    clean: Snapshot
    clean_edited: Snapshot
    clean_keyword: Snapshot
    points: dict[str, list[dict[str, Any]]]  # the points of each kind's clean run


def _references(vault: Path, indexes: Path, model: Path, holds: Path) -> References:
    notes, edited = _notes(), _edited(_notes())
    _put(vault, notes)
    clean = Target(vault, indexes / "clean", _env(indexes / "clean", model))
    points = {FIRST: clean.recorded_run(Hold(holds / "clean-first"))}
    reference = _snapshot(clean.settings, vectors=True)
    points[FORCE] = clean.recorded_run(Hold(holds / "clean-force"), "--force")
    assert not _differences(_snapshot(clean.settings, vectors=True), reference)
    keyword = Target(vault, indexes / "clean-kw", _env(indexes / "clean-kw", None))
    points[KEYWORD_ONLY] = keyword.recorded_run(Hold(holds / "clean-keyword"))
    reference_keyword = _snapshot(keyword.settings, vectors=False)
    assert _same_results(
        reference_keyword.results, _snapshot(clean.settings, vectors=False).results
    )
    # The edits on a copy of the clean index, against a clean index of the edited notes.
    updated = Target(vault, indexes / "updated", _env(indexes / "updated", model))
    shutil.copytree(clean.index_dir, updated.index_dir)
    _put(vault, edited)
    clean_edited = Target(vault, indexes / "clean-edited", _env(indexes / "clean-edited", model))
    clean_edited.recorded_run(Hold(holds / "clean-edited"))
    reference_edited = _snapshot(clean_edited.settings, vectors=True)
    points[EDITS] = updated.recorded_run(Hold(holds / "clean-edits"))
    assert not _differences(_snapshot(updated.settings, vectors=True), reference_edited)
    _put(vault, notes)
    return References(notes, edited, reference, reference_edited, reference_keyword, points)


def _kill_and_rerun(
    kind: str, kill: tuple[Hold, int, float], target: Target, refs: References
) -> tuple[bool, list[str]]:
    """One kill of `kind` (held at a point, killed a share of the way to the next) and the
    run after it; whether the kill hit a run at work, and how the result differs from the
    clean index of the same notes."""
    expected = refs.clean
    hold, at, share = kill
    clean = refs.points[kind]
    if kind == FORCE:  # on the complete index of the last kill
        killed = target.killed_run(hold, clean, at, share, "--force")
    elif kind == EDITS:
        _put(target.vault, refs.edited)
        killed = target.killed_run(hold, clean, at, share)
        expected = refs.clean_edited
    else:
        shutil.rmtree(target.index_dir, ignore_errors=True)
        killed = target.killed_run(hold, clean, at, share)
        if kind == KEYWORD_ONLY:
            expected = refs.clean_keyword
    try:
        target.rerun()
        got = _snapshot(target.settings, vectors=kind != KEYWORD_ONLY)
        return killed, _differences(got, expected)
    except AssertionError as exc:  # an index not even consistent in itself
        return killed, [str(exc).splitlines()[0]]
    finally:
        _put(target.vault, refs.notes)


def test_killed_index_runs_end_as_a_clean_index(tmp_path: Path, tiny_model: Path) -> None:
    vault = tmp_path / "vault"
    indexes = tmp_path / "indexes"
    victim = Target(vault, indexes / "victim", _env(indexes / "victim", tiny_model))
    victim_keyword = Target(vault, indexes / "victim-kw", _env(indexes / "victim-kw", None))
    # Attached for the whole test, so the managed server outlives each killed run (as it
    # does for a user with the app open) instead of starting again for every one.
    keeper = resolve_provider(victim.settings.search).embedder
    assert keeper is not None
    try:
        keeper.embed(["warm up"], kind="query")
        holds = tmp_path / "holds"
        refs = _references(vault, indexes, tiny_model, holds)
        rng = random.Random(SEED)
        log: list[str] = []
        for number in range(KILLS):
            # In turn: a first index, then --force and the edits on the index it left.
            kind = KINDS[number % len(KINDS)]
            clean = refs.points[kind]
            # Any point but the last ("end": the work is done), and a share of the way on.
            at, share = rng.randint(1, len(clean) - 1), rng.random()
            point = clean[at - 1]
            target = victim_keyword if kind == KEYWORD_ONLY else victim
            kill = (Hold(holds / f"kill-{number + 1}"), at, share)
            killed, problems = _kill_and_rerun(kind, kill, target, refs)
            entry = (
                f"#{number + 1} {kind}: kill {share:.0%} on from point {at}/{len(clean)} "
                f"({point['phase']} {point['done']}/{point['total']})"
            ) + ("" if killed else " (not at work)")
            log.append(entry + (f" -> differs in {', '.join(problems)}" if problems else ""))
        print("\n" + "\n".join(log))
        worked = {kind: round(p[-1]["t"] - p[0]["t"], 2) for kind, p in refs.points.items()}
        print(f"seconds each kind of clean run holds the writer lock: {worked}")
        assert [entry for entry in log if " -> " in entry] == []
        # Every kill hit a run at work: held or between two points, never one already done.
        assert [entry for entry in log if "(not at work)" in entry] == []
    finally:
        keeper.close()
