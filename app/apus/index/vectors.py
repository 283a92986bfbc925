"""The FAISS vector index (derived from the store's embedding cache) and the embedding stage."""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import faiss
import numpy as np

from apus.embed.base import Embedder, EmbeddingIdentity
from apus.errors import ApusError
from apus.index.media import embed_media_chunks, split_media
from apus.index.store import Store

# Chunks per checkpoint: each batch is embedded, cached and committed before the next, so a
# killed run resumes where it stopped. The embedder packs requests by tokens on its own.
EMBED_BATCH_CHUNKS = 16


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
    (chunk ids), the k nearest among those only (FAISS skips the others while scanning)."""
    faiss.omp_set_num_threads(_SEARCH_THREADS)
    vector = query.reshape(1, -1).astype(np.float32)
    if allowed is None:
        scores, ids = index.search(vector, min(k, index.ntotal))
    elif len(allowed) == 0:
        return {}
    else:
        selector = faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))
        params = faiss.SearchParameters(sel=selector)
        scores, ids = index.search(vector, min(k, index.ntotal, len(allowed)), params=params)
    return {int(i): float(s) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0}


HealthState = Literal["ok", "rebuilt", "missing", "damaged"]
_REBUILD_FIX = "apus memory index  (rebuilds it from the vectors kept in the index database)"
# Vectors compared with the store on each refresh: cheap, and over many syncs they catch a
# file that matches its stamp but not the store (vectors replaced under the same chunk ids).
_SAMPLE = 8


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
class _Loaded:
    index: faiss.Index | None
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
        self._loaded: _Loaded | None = None
        self._loaded_signature: tuple[object, ...] | None = None
        self.last_refresh = VectorHealth("ok")  # what the latest refresh() found and did

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

    def _load(self, identity_key: str) -> _Loaded:
        """Read and check the file (sha256, count); a mismatch is reported, not served."""
        stamp = self.stamp()
        problem = _stamp_problem(stamp, identity_key)
        if problem is not None:
            return _Loaded(None, problem, built=False)
        assert stamp is not None
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            return _Loaded(None, _unreadable(exc))
        digest = hashlib.sha256(data).hexdigest()
        known = _known_digests(stamp)
        if digest not in known and None not in known:
            # The writer replaces the stamp, then the file: a stamp read just before both
            # changed names the file before this one. The stamp read now names this one.
            stamp = self.stamp() or {}
            known = _known_digests(stamp) if stamp.get("identity") == identity_key else {}
        expected = known.get(digest, known.get(None, -1))
        if expected == -1:
            return _Loaded(None, _MISMATCH)
        try:
            index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        except Exception as exc:  # FAISS raises RuntimeError for what it cannot parse
            return _Loaded(None, VectorHealth("damaged", f"vectors.faiss cannot be loaded ({exc})"))
        if expected is not None and index.ntotal != expected:
            reason = f"vectors.faiss holds {index.ntotal} vectors, its stamp says {expected}"
            return _Loaded(None, VectorHealth("damaged", reason))
        return _Loaded(index, VectorHealth("ok"))

    def refresh(self, store: Store, identity: EmbeddingIdentity) -> int:
        """Bring the FAISS file in line with the store's vectors for `identity`; return count.

        A file that is missing, damaged, built from another store, or whose vectors differ
        from the store's is rebuilt from the store; `last_refresh` says so and why.
        """
        key = identity.key()
        loaded = self._load(key)
        index = loaded.index
        problem = "" if loaded.health.usable or not loaded.built else loaded.health.reason
        stamp = self.stamp() or {}
        if index is not None and not stamp.get("sha256"):
            index, problem = None, "it was written by an older Apus, without a checksum"
        elif index is not None and stamp.get("store_id") != store.store_id():
            index, problem = None, "it was built from another index database"
        elif index is not None and index.d != identity.dims:
            index, problem = None, f"it has {index.d} dimensions, the model {identity.dims}"
        wanted = store.vector_chunk_ids(key)
        changed = index is None or stamp.get("identity") != key
        if index is not None:
            changed |= self._update(index, store, key, wanted)
            problem = _content_problem(index, store, key, wanted)
            if problem:
                index = None
        if index is None:
            index = self._build(store, identity, wanted)
            changed = True
        self.last_refresh = VectorHealth("rebuilt", problem) if problem else VectorHealth("ok")
        if changed:
            self._write(index, key, store.store_id(), repaired=problem)
        return int(index.ntotal)

    @staticmethod
    def _update(index: faiss.Index, store: Store, key: str, wanted: set[int]) -> bool:
        """Remove vectors of chunks gone, add those of new chunks; True if anything changed."""
        present = set(faiss.vector_to_array(index.id_map).tolist()) if index.ntotal else set()
        stale = present - wanted
        if stale:
            index.remove_ids(np.fromiter(stale, dtype=np.int64))
        missing = sorted(wanted - present)
        _add_from_store(index, store, key, missing)
        return bool(stale or missing)

    @staticmethod
    def _build(store: Store, identity: EmbeddingIdentity, wanted: set[int]) -> faiss.Index:
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(identity.dims))
        _add_from_store(index, store, identity.key(), sorted(wanted))
        return index

    def _write(
        self, index: faiss.Index, identity_key: str, store_id: str, *, repaired: str
    ) -> None:
        data = faiss.serialize_index(index).tobytes()
        digest = hashlib.sha256(data).hexdigest()
        previous = self.stamp() or {}
        stamp = {
            "identity": identity_key,
            "store_id": store_id,
            "count": int(index.ntotal),
            "sha256": digest,
            "at": time.time(),
            "repaired": repaired,  # why this file was rebuilt from the store, if it was
        }
        if previous.get("identity") == identity_key and previous.get("sha256"):
            # Readers may still hold the file this one replaces: let them check it too.
            stamp["previous_sha256"] = previous["sha256"]
            stamp["previous_count"] = previous.get("count")
        # Stamp first, then the file: a reader sees an old file with a stamp that still
        # knows it, never a file its stamp has not heard of (see _load).
        _atomic_write(self.stamp_path, json.dumps(stamp).encode("utf-8"))
        _atomic_write(self.path, data)

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
            return nearest(loaded.index, query, k, allowed)

    def count(self, identity_key: str) -> int:
        """Vectors on disk for this identity, from the stamp (reading the index costs MBs)."""
        stamp = self.stamp()
        if not stamp or stamp.get("identity") != identity_key:
            return 0
        return int(stamp.get("count", 0))

    def _current(self, identity_key: str) -> _Loaded:
        """The loaded index, read again only when the stamp or the file changed."""
        signature = (identity_key, _file_signature(self.stamp_path), _file_signature(self.path))
        if self._loaded is None or self._loaded_signature != signature:
            self._loaded = self._load(identity_key)
            self._loaded_signature = signature
        return self._loaded


def _stamp_problem(stamp: dict[str, Any] | None, identity_key: str) -> VectorHealth | None:
    if stamp is None:
        return VectorHealth("missing", "vectors.faiss has not been built yet")
    if stamp.get("identity") != identity_key:
        return VectorHealth("missing", "vectors.faiss was built for another embedding model")
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


def _add_from_store(index: faiss.Index, store: Store, key: str, chunk_ids: list[int]) -> None:
    if not chunk_ids:
        return
    ids: list[int] = []
    rows: list[np.ndarray] = []
    for chunk_id, vector in store.vectors_for_chunks(key, chunk_ids):
        ids.append(chunk_id)
        rows.append(vector)
    if ids:
        index.add_with_ids(np.vstack(rows).astype(np.float32), np.asarray(ids, np.int64))


def _content_problem(index: faiss.Index, store: Store, key: str, wanted: set[int]) -> str:
    """Why the index does not hold the store's vectors, or "" (count, then a sample)."""
    if index.ntotal != len(wanted):
        return f"it held {index.ntotal} vectors for the store's {len(wanted)}"
    sample = random.sample(sorted(wanted), min(_SAMPLE, len(wanted)))
    for chunk_id, vector in store.vectors_for_chunks(key, sample):
        if not np.allclose(index.reconstruct(chunk_id), vector, atol=1e-6):
            return f"its vector of chunk {chunk_id} differs from the store's"
    return ""


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


@dataclass(frozen=True)
class EmbedProgress:
    done: int
    total: int
    cached: int


def embed_missing(
    store: Store,
    embedder: Embedder,
    identity: EmbeddingIdentity,
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[EmbedProgress], None] | None = None,
    order: Sequence[int] | None = None,
) -> int:
    """Give every chunk a vector for `identity`, from the cache or the provider.

    `order` lists the chunks still missing a vector in the order to embed them (default: by
    id). Returns how many chunks were embedded by the provider (cache hits excluded). Raises
    the provider's error after committing what was done, so the next run resumes from there.
    """
    key = identity.key()
    missing = list(order) if order is not None else store.chunks_missing_vectors(key)
    total = len(missing)
    done = cached_total = embedded = 0
    if progress is not None and total:
        progress(EmbedProgress(0, total, 0))  # the first batch can take a while on a CPU
    for start in range(0, total, EMBED_BATCH_CHUNKS):
        if cancel is not None and cancel.is_set():
            break
        ids = missing[start : start + EMBED_BATCH_CHUNKS]
        chunks = store.chunks_by_id(ids)
        ordered, media_chunks = split_media([chunks[i] for i in ids if i in chunks])
        media = embed_media_chunks(store, embedder, identity, media_chunks)
        texts = [
            embedder.document_text(c.text, _title_for_prefix(c.title, c.path)) for c in ordered
        ]
        keys = [cache_key(identity, text) for text in texts]
        cached = store.cached_vectors(keys)
        todo = [index for index, k in enumerate(keys) if k not in cached]
        fresh: list[tuple[str, np.ndarray]] = []
        if todo:
            vectors = embedder.embed([texts[i] for i in todo], kind="document")
            fresh = [(keys[i], vectors[row]) for row, i in enumerate(todo)]
        with store.transaction():
            store.put_vectors(fresh)
            store.set_chunk_vectors((c.id, key, k) for c, k in zip(ordered, keys, strict=True))
        done += len(ids)
        cached_total += len(ordered) - len(todo) + media.cached
        embedded += len(todo) + media.embedded
        if progress is not None:
            progress(EmbedProgress(done, total, cached_total))
    return embedded


def _title_for_prefix(title: str, path: str) -> str | None:
    """A note's own title for the document prefix; a bare file stem is not a title."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return None if not title or title == stem else title
