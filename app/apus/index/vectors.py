"""The FAISS vector index (derived from the store's embedding cache) and the embedding stage."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

from apus.embed.base import Embedder, EmbeddingIdentity
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


def nearest(index: faiss.Index, query: np.ndarray, k: int) -> dict[int, float]:
    """Chunk id -> inner product for the k nearest vectors of one query."""
    faiss.omp_set_num_threads(_SEARCH_THREADS)
    scores, ids = index.search(query.reshape(1, -1).astype(np.float32), min(k, index.ntotal))
    return {int(i): float(s) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0}


class VectorIndex:
    """Owns `vectors.faiss` (+ its stamp) of one vault index: inner product on unit vectors."""

    FILENAME = "vectors.faiss"
    STAMP = "vectors.json"

    def __init__(self, index_dir: Path) -> None:
        self.path = index_dir / self.FILENAME
        self.stamp_path = index_dir / self.STAMP
        self._lock = threading.Lock()
        self._index: faiss.Index | None = None
        self._loaded_stamp: tuple[float, str] | None = None

    def stamp(self) -> dict[str, object] | None:
        try:
            return json.loads(self.stamp_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _read(self) -> faiss.Index | None:
        try:
            return faiss.read_index(str(self.path))
        except Exception:  # FAISS raises RuntimeError for missing or damaged files
            return None

    def refresh(self, store: Store, identity: EmbeddingIdentity) -> int:
        """Bring the FAISS file in line with the store's vectors for `identity`; return count."""
        key = identity.key()
        stamp = self.stamp()
        index = self._read() if stamp and stamp.get("identity") == key else None
        if index is None or index.d != identity.dims:
            index = faiss.IndexIDMap2(faiss.IndexFlatIP(identity.dims))
        wanted = store.vector_chunk_ids(key)
        present = set(faiss.vector_to_array(index.id_map).tolist()) if index.ntotal else set()
        stale = present - wanted
        if stale:
            index.remove_ids(np.fromiter(stale, dtype=np.int64))
        missing = sorted(wanted - present)
        if missing:
            ids: list[int] = []
            rows: list[np.ndarray] = []
            # Only the missing vectors are read: on an unchanged vault that is none of them.
            for chunk_id, vector in store.vectors_for_chunks(key, missing):
                ids.append(chunk_id)
                rows.append(vector)
            index.add_with_ids(np.vstack(rows).astype(np.float32), np.asarray(ids, np.int64))
        if stale or missing or stamp is None or stamp.get("identity") != key:
            self._write(index, key)
        return int(index.ntotal)

    def _write(self, index: faiss.Index, identity_key: str) -> None:
        tmp = self.path.with_suffix(".faiss.tmp")
        faiss.write_index(index, str(tmp))
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        stamp_tmp = self.stamp_path.with_suffix(".json.tmp")
        stamp_tmp.write_text(
            json.dumps({"identity": identity_key, "count": int(index.ntotal), "at": time.time()}),
            encoding="utf-8",
        )
        os.replace(stamp_tmp, self.stamp_path)

    def search(self, query: np.ndarray, k: int, identity_key: str) -> dict[int, float]:
        """Chunk id -> cosine similarity for the k nearest chunks (empty when not built)."""
        with self._lock:
            index = self._current(identity_key)
            if index is None or index.ntotal == 0:
                return {}
            return nearest(index, query, k)

    def count(self, identity_key: str) -> int:
        """Vectors on disk for this identity, from the stamp (reading the index costs MBs)."""
        stamp = self.stamp()
        if not stamp or stamp.get("identity") != identity_key:
            return 0
        return int(stamp.get("count", 0))  # type: ignore[call-overload]

    def _current(self, identity_key: str) -> faiss.Index | None:
        try:
            signature = (self.stamp_path.stat().st_mtime, identity_key)
        except OSError:
            return None
        if self._loaded_stamp != signature:
            stamp = self.stamp()
            self._index = self._read() if stamp and stamp.get("identity") == identity_key else None
            self._loaded_stamp = signature
        return self._index


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
) -> int:
    """Give every chunk a vector for `identity`, from the cache or the provider.

    Returns how many chunks were embedded by the provider (cache hits excluded). Raises the
    provider's error after committing what was done, so the next run resumes from there.
    """
    key = identity.key()
    missing = store.chunks_missing_vectors(key)
    total = len(missing)
    done = cached_total = embedded = 0
    if progress is not None and total:
        progress(EmbedProgress(0, total, 0))  # the first batch can take a while on a CPU
    for start in range(0, total, EMBED_BATCH_CHUNKS):
        if cancel is not None and cancel.is_set():
            break
        ids = missing[start : start + EMBED_BATCH_CHUNKS]
        chunks = store.chunks_by_id(ids)
        ordered = [chunks[i] for i in ids if i in chunks]
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
        cached_total += len(ordered) - len(todo)
        embedded += len(todo)
        if progress is not None:
            progress(EmbedProgress(done, total, cached_total))
    return embedded


def _title_for_prefix(title: str, path: str) -> str | None:
    """A note's own title for the document prefix; a bare file stem is not a title."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return None if not title or title == stem else title
