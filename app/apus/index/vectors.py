"""The FAISS vector index as searches read it: the file checked against its stamp, nearest
neighbours, and the cache key a vector is kept under.

The file is derived from the store's embedding cache and written only by a sync
(`apus.indexing.vectors.VectorWriter`); a file that does not match its stamp is never served.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from apus.embed.base import EmbeddingIdentity
from apus.errors import ApusError
from apus.index.shortlist import SHORTLIST_FROM, BinaryShortlist

if TYPE_CHECKING:
    import faiss


def cache_key(identity: EmbeddingIdentity, text_sent: str) -> str:
    """Identity + sha256 of the exact text sent (prefix included): never reused across schemes."""
    digest = hashlib.sha256(text_sent.encode("utf-8")).hexdigest()
    return f"{identity.key()}:{digest}"


# One thread per query search. A single query is one pass over the vectors; with two OpenMP
# threads on a 2-core machine that is also running the embedding server, the search took
# 2-3.5x longer than with one (threads spin at a barrier while the other is descheduled).
_SEARCH_THREADS = 1


def nearest(
    index: faiss.Index, query: np.ndarray, k: int, allowed: np.ndarray | None = None
) -> dict[int, float]:
    """Chunk id -> inner product for the k nearest vectors of one query; with `allowed`
    (chunk ids), the k nearest among those only (FAISS skips the others while scanning).
    An exact scan of every vector: `VectorSearch` is how searches read an index."""
    # FAISS is imported where vectors are used: it costs a keyword-only command ~0.2 s.
    import faiss

    faiss.omp_set_num_threads(_SEARCH_THREADS)
    vector = query.reshape(1, -1).astype(np.float32)
    if allowed is None:
        scores, ids = index.search(vector, min(k, index.ntotal))
    elif len(allowed) == 0:
        return {}
    else:
        selector = faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))
        params = faiss.SearchParameters()
        params.sel = selector
        scores, ids = index.search(vector, min(k, index.ntotal, len(allowed)), params=params)
    return {int(i): float(s) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0}


class VectorSearch:
    """How a loaded index answers: an exact scan while it is small, a binary shortlist
    rescored exactly (`apus.index.shortlist`) from `SHORTLIST_FROM` vectors on. Made once
    per loaded index; every search of that index goes the same way, so the same query
    always gets the same answer from it."""

    def __init__(self, index: faiss.IndexIDMap) -> None:
        self.index = index
        self.shortlist = BinaryShortlist(index) if index.ntotal >= SHORTLIST_FROM else None

    def __call__(
        self, query: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> dict[int, float]:
        if self.shortlist is None:
            return nearest(self.index, query, k, allowed)
        import faiss

        faiss.omp_set_num_threads(_SEARCH_THREADS)
        return self.shortlist.search(query, k, allowed)


HealthState = Literal["ok", "rebuilt", "missing", "damaged"]
_REBUILD_FIX = "apus memory index  (rebuilds it from the vectors kept in the index database)"


@dataclass(frozen=True)
class VectorHealth:
    """Whether vectors.faiss can be served: ok, rebuilt (from the store, and why), or
    missing / damaged (why) until the next `apus memory index` rebuilds it."""

    state: HealthState
    reason: str = ""

    @property
    def usable(self) -> bool:
        return self.state in ("ok", "rebuilt")


_MISMATCH = VectorHealth("damaged", "vectors.faiss does not match its checksum")


class VectorIndexError(ApusError):
    """vectors.faiss cannot be served; the store still holds every vector to rebuild it."""

    def __str__(self) -> str:
        # One line: the engine shows it as the reason the vector leg did not run.
        return f"{self.reason} Fix: {self.fix}"


@dataclass(frozen=True)
class LoadedIndex:
    """An index read from the file (None when it cannot be served) and what was found."""

    index: faiss.IndexIDMap | None
    health: VectorHealth
    built: bool = True  # False: never written for this identity (not damage, just not yet)


class VectorIndex:
    """Owns `vectors.faiss` (+ its stamp) of one vault index: inner product on unit vectors.

    The stamp records what the file must be: the identity and store it was built from, its
    vector count and its sha256. A file that does not match is never served, and the next
    refresh rebuilds it from the store (where every vector lives).
    """

    FILENAME = "vectors.faiss"
    STAMP = "vectors.json"

    def __init__(self, index_dir: Path) -> None:
        self.path = index_dir / self.FILENAME
        self.stamp_path = index_dir / self.STAMP
        self._lock = threading.Lock()
        self._loaded: LoadedIndex | None = None
        self._loaded_signature: tuple[object, ...] | None = None
        self._loaded_ids: frozenset[int] | None = None
        self._search: VectorSearch | None = None  # of the loaded index, made at its first search

    def stamp(self) -> dict[str, Any] | None:
        try:
            stamp = json.loads(self.stamp_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return stamp if isinstance(stamp, dict) else None

    def health(self, identity_key: str) -> VectorHealth:
        """The file checked against its stamp (identity, sha256) without loading it."""
        stamp = self.stamp()
        problem = _stamp_problem(stamp, identity_key)
        if problem is not None:
            return problem
        assert stamp is not None
        try:
            digest = _file_sha256(self.path)
        except OSError as exc:
            return _unreadable(exc)
        known = _known_digests(stamp)
        if digest not in known and None not in known:
            return _MISMATCH
        repaired = stamp.get("repaired")
        if isinstance(repaired, str) and repaired:
            return VectorHealth("rebuilt", repaired)
        return VectorHealth("ok")

    def _load(self, identity_key: str) -> LoadedIndex:
        """Read and check the file (sha256, count); a mismatch is reported, not served."""
        import faiss

        stamp = self.stamp()
        problem = _stamp_problem(stamp, identity_key)
        if problem is not None:
            return LoadedIndex(None, problem, built=False)
        assert stamp is not None
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            return LoadedIndex(None, _unreadable(exc))
        digest = hashlib.sha256(data).hexdigest()
        known = _known_digests(stamp)
        if digest not in known and None not in known:
            # The writer replaces the stamp, then the file: a stamp read just before both
            # changed names the file before this one. The stamp read now names this one.
            stamp = self.stamp() or {}
            known = _known_digests(stamp) if stamp.get("identity") == identity_key else {}
        expected = known.get(digest, known.get(None, -1))
        if expected == -1:
            return LoadedIndex(None, _MISMATCH)
        try:
            index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        except Exception as exc:  # FAISS raises RuntimeError for what it cannot parse
            health = VectorHealth("damaged", f"vectors.faiss cannot be loaded ({exc})")
            return LoadedIndex(None, health)
        if not isinstance(index, faiss.IndexIDMap):  # what _build writes: vectors under chunk ids
            return LoadedIndex(None, VectorHealth("damaged", "vectors.faiss holds no chunk ids"))
        if expected is not None and index.ntotal != expected:
            reason = f"vectors.faiss holds {index.ntotal} vectors, its stamp says {expected}"
            return LoadedIndex(None, VectorHealth("damaged", reason))
        return LoadedIndex(index, VectorHealth("ok"))

    def search(
        self,
        query: np.ndarray,
        k: int,
        identity_key: str,
        allowed: np.ndarray | None = None,
    ) -> dict[int, float]:
        """Chunk id -> cosine similarity for the k nearest chunks (among `allowed` chunk ids
        when given).

        Raises VectorIndexError when the file is missing or damaged: the vector leg then
        says why it did not run instead of answering from nothing or from garbage.
        """
        with self._lock:
            loaded = self._current(identity_key)
            if loaded.index is None:
                raise VectorIndexError(
                    f"Vector search is unavailable: {loaded.health.reason}.", _REBUILD_FIX
                )
            if loaded.index.ntotal == 0:
                return {}
            if self._search is None:
                self._search = VectorSearch(loaded.index)
            return self._search(query, k, allowed)

    def stamped_key(self, identity_key: str) -> str:
        """The key the stamp names when it is of this identity at any layout (width, kind),
        else `identity_key`: what a check of the file against its stamp reads with."""
        named = (self.stamp() or {}).get("identity")
        if isinstance(named, str) and named.split(":", 1)[0] == identity_key:
            return named
        return identity_key

    def count(self, identity_key: str) -> int:
        """Vectors on disk for this identity, from the stamp (reading the index costs MBs)."""
        stamp = self.stamp()
        if not stamp or stamp.get("identity") != identity_key:
            return 0
        return int(stamp.get("count", 0))

    def ids(self, identity_key: str) -> frozenset[int]:
        """The chunk ids the file holds vectors of (none when it cannot be served): while
        vectors are being built, the chunks a search by meaning can know about."""
        import faiss  # loaded only where vectors are read (a keyword search never needs it)

        with self._lock:
            loaded = self._current(identity_key)
            if loaded.index is None:
                return frozenset()
            if self._loaded_ids is None:
                index: Any = loaded.index  # IndexIDMap2: FAISS's stubs lack its id_map
                held: np.ndarray = faiss.vector_to_array(index.id_map)
                self._loaded_ids = frozenset(held.tolist())
            return self._loaded_ids

    def _current(self, identity_key: str) -> LoadedIndex:
        """The loaded index, read again only when the stamp or the file changed."""
        signature = self._signature(identity_key)
        if self._loaded is None or self._loaded_signature != signature:
            self._loaded = self._load(identity_key)
            self._loaded_signature = signature
            self._loaded_ids = None
            self._search = None
        return self._loaded

    def _signature(self, identity_key: str) -> tuple[object, ...]:
        return (identity_key, _file_signature(self.stamp_path), _file_signature(self.path))


def _stamp_problem(stamp: dict[str, Any] | None, identity_key: str) -> VectorHealth | None:
    if stamp is None:
        return VectorHealth("missing", "vectors.faiss has not been built yet")
    if stamp.get("identity") != identity_key:
        return VectorHealth(
            "missing", "vectors.faiss was built for another embedding model or vector width"
        )
    return None


def _known_digests(stamp: dict[str, Any]) -> dict[str | None, int | None]:
    """sha256 -> vector count of the files the stamp vouches for (a stamp written before
    checksums vouches for any file: None)."""
    if not stamp.get("sha256"):
        return {None: stamp.get("count")}
    known = {stamp["sha256"]: stamp.get("count")}
    if stamp.get("previous_sha256"):
        known[stamp["previous_sha256"]] = stamp.get("previous_count")
    return known


def _unreadable(exc: OSError) -> VectorHealth:
    if isinstance(exc, FileNotFoundError):
        return VectorHealth("missing", "vectors.faiss is missing")
    return VectorHealth("damaged", f"vectors.faiss cannot be read ({exc.strerror or exc})")


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _file_signature(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns
