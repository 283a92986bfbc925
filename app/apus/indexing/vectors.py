"""The write half of the FAISS vector index: vectors.faiss brought in line with the store.

The embedding step runs `VectorWriter.refresh` after each sync, and as its batches commit
while it embeds (`VectorAppender`: a growing file, so search by meaning covers what is already
embedded); searches read the file it writes through `apus.index.vectors.VectorIndex`. A file
that is missing, damaged, built from another store, or whose vectors differ from the store's
is rebuilt from the store, where every vector lives.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from pathlib import Path

import faiss
import numpy as np

from apus.embed.base import EmbeddingIdentity
from apus.index.store import Store
from apus.index.vector_layout import VectorLayout
from apus.index.vectors import LoadedIndex, VectorHealth, VectorIndex

# Vectors compared with the store on each refresh: cheap, and over many syncs they catch a
# file that matches its stamp but not the store (vectors replaced under the same chunk ids).
_SAMPLE = 8


class VectorWriter(VectorIndex):
    """A `VectorIndex` that also writes the file; `last_refresh` is what `refresh` found and did."""

    def __init__(self, index_dir: Path) -> None:
        super().__init__(index_dir)
        self.last_refresh = VectorHealth("ok")
        # The index this writer last wrote, with the file signature it left: the next
        # refresh grows it in memory instead of reading the file back.
        self._written: tuple[faiss.IndexIDMap, tuple[object, ...]] | None = None

    def refresh(self, store: Store, identity: EmbeddingIdentity, layout: VectorLayout) -> int:
        """Bring the FAISS file in line with the store's vectors for `identity`, held as
        `layout` says (its width, its kind); return the count.

        A file that is missing, damaged, built from another store or another layout, or
        whose vectors differ from the store's is rebuilt from the store; `last_refresh` says
        so and why.
        """
        key = identity.key()  # the store's vectors
        file_key = layout.key(identity)  # what the file's stamp names
        loaded = self._own_or_load(file_key)
        index = loaded.index
        problem = "" if loaded.health.usable or not loaded.built else loaded.health.reason
        stamp = self.stamp() or {}
        if index is not None and not stamp.get("sha256"):
            index, problem = None, "it was written by an older Apus, without a checksum"
        elif index is not None and stamp.get("store_id") != store.store_id():
            index, problem = None, "it was built from another index database"
        elif index is not None and index.d != layout.dims:
            problem = f"it has {index.d} dimensions, the settings ask for {layout.dims}"
            index = None
        wanted = store.vector_chunk_ids(key)
        changed = index is None or stamp.get("identity") != file_key
        if index is not None:
            changed |= self._update(index, store, key, wanted, layout)
            problem = _content_problem(index, store, key, wanted, layout)
            if problem:
                index = None
        if index is None:
            index = self._build(store, key, wanted, layout)
            changed = True
        self.last_refresh = VectorHealth("rebuilt", problem) if problem else VectorHealth("ok")
        if changed:
            self._write(index, file_key, store.store_id(), repaired=problem)
        return int(index.ntotal)

    def _own_or_load(self, key: str) -> LoadedIndex:
        """The index this writer wrote last, while the file on disk is still that one."""
        if self._written is not None and self._written[1] == self._signature(key):
            return LoadedIndex(self._written[0], VectorHealth("ok"))
        self._written = None
        return self._load(key)

    @staticmethod
    def _update(
        index: faiss.IndexIDMap, store: Store, key: str, wanted: set[int], layout: VectorLayout
    ) -> bool:
        """Remove vectors of chunks gone, add those of new chunks; True if anything changed."""
        present = set(faiss.vector_to_array(index.id_map).tolist()) if index.ntotal else set()
        stale = present - wanted
        if stale:
            index.remove_ids(faiss.IDSelectorBatch(np.fromiter(stale, dtype=np.int64)))
        missing = sorted(wanted - present)
        _add_from_store(index, store, key, missing, layout)
        return bool(stale or missing)

    @staticmethod
    def _build(store: Store, key: str, wanted: set[int], layout: VectorLayout) -> faiss.IndexIDMap:
        index = layout.new_index()
        _add_from_store(index, store, key, sorted(wanted), layout)
        return index

    def _write(
        self, index: faiss.IndexIDMap, identity_key: str, store_id: str, *, repaired: str
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
        self._written = (index, self._signature(identity_key))


class VectorAppender:
    """vectors.faiss grown while an embedding runs, so searches meanwhile cover what is done.

    Each committed batch is counted; the file is written again once the vectors added since
    the last write reach a quarter of those it holds (and at once while it holds none).
    Writing the whole file after every 16-chunk batch would write O(n^2) bytes over a large
    vault (38k passages: ~2,400 writes of a file up to 100 MB); growing it by a quarter each
    time writes at most about 5x its final size in all (1 + 0.8 + 0.8^2 + ...), and a batch
    waits at most a fifth of the file before a search can find it. The embedding step's own
    refresh at the end writes what is left.
    """

    GROWTH = 0.25

    def __init__(
        self,
        writer: VectorWriter,
        store: Store,
        identity: EmbeddingIdentity,
        layout: VectorLayout,
    ) -> None:
        self.writer = writer
        self.store = store
        self.identity = identity
        self.layout = layout
        self.written = writer.count(layout.key(identity))
        self.pending = 0
        self.writes = 0

    def committed(self, chunks: int) -> None:
        """A batch of `chunks` vectors is committed to the store; write when it is time."""
        self.pending += chunks
        if self.pending and self.pending >= self.GROWTH * self.written:
            self.written = self.writer.refresh(self.store, self.identity, self.layout)
            self.pending = 0
            self.writes += 1


def _add_from_store(
    index: faiss.Index, store: Store, key: str, chunk_ids: list[int], layout: VectorLayout
) -> None:
    if not chunk_ids:
        return
    ids: list[int] = []
    rows: list[np.ndarray] = []
    for chunk_id, vector in store.vectors_for_chunks(key, chunk_ids):
        ids.append(chunk_id)
        rows.append(vector)
    if ids:
        index.add_with_ids(layout.fit(np.vstack(rows)), np.asarray(ids, np.int64))


def _content_problem(
    index: faiss.Index, store: Store, key: str, wanted: set[int], layout: VectorLayout
) -> str:
    """Why the index does not hold the store's vectors, or "" (count, then a sample)."""
    if index.ntotal != len(wanted):
        return f"it held {index.ntotal} vectors for the store's {len(wanted)}"
    sample = random.sample(sorted(wanted), min(_SAMPLE, len(wanted)))
    for chunk_id, vector in store.vectors_for_chunks(key, sample):
        if not np.allclose(index.reconstruct(chunk_id), layout.fit(vector), atol=layout.tolerance):
            return f"its vector of chunk {chunk_id} differs from the store's"
    return ""


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
