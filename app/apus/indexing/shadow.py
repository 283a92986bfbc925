"""A forced rebuild, built beside the live index and swapped in when it is complete.

`apus memory index --force` writes a whole new index into `rebuild/` inside the index folder
(its own SQLite store, keyword index and vectors.faiss) while search keeps answering from the
live index: keyword search stays available, with the old results, until the new index is
ready. The new store starts from the live one's embedding cache, so text embedded before is
not embedded again. Once complete, the new index replaces the live one in three steps:

1. the store, by SQLite's backup API: one write transaction, so a reader sees the old
   database or the new one, never a mix, however long it has held its connection;
2. the keyword folder, exchanged in one step where the system can (apus.index.fileswap);
3. vectors.json, then vectors.faiss (the new stamp still vouches for the file it replaces).

Readers follow each step with what they already check on every query (the store's
generation and data_version, the keyword stamp's mtime, the FAISS file's inode) and reopen
that part. Between steps a reader may pair the new store with the old keyword index or
FAISS: every chunk whose text did not change keeps the id it has in the live store, so those
ids still name the same text, and search does not come back empty.

A run that dies before step 1 leaves the live index as it was; the next sync copies the
embedding cache out of the half-built one and deletes it. One that dies after step 1 leaves
a keyword index and FAISS behind the store, which the next sync rebuilds from the store as it
does for any index that lags behind.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from apus.index.keyword import KeywordIndex
from apus.index.shadow_store import continue_from, replace_contents, salvage_cache
from apus.index.store import Store
from apus.index.vectors import VectorIndex

DIRNAME = "rebuild"


def shadow_dir(index_dir: Path) -> Path:
    """Where a forced rebuild builds the new index: inside the index folder, so on the same
    file system (renames into place are atomic) and under the same writer lock."""
    return index_dir / DIRNAME


def open_shadow(index_dir: Path, live: Store) -> Store:
    """A new, empty shadow store that carries on from `live` (`shadow_store.continue_from`)."""
    folder = shadow_dir(index_dir)
    shutil.rmtree(folder, ignore_errors=True)
    shadow = Store(folder)
    try:
        continue_from(shadow, live.path)
    except BaseException:
        shadow.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return shadow


def discard_leftover(index_dir: Path, live: Store) -> bool:
    """Delete a rebuild that did not finish (killed, stopped, or failed), after copying its
    embedding cache into the live store. Call it holding the writer lock; returns whether
    there was one."""
    folder = shadow_dir(index_dir)
    if not os.path.lexists(folder):
        return False
    database = folder / Store.FILENAME
    if database.is_file():
        salvage_cache(live, database)
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder, ignore_errors=True)
    else:
        folder.unlink(missing_ok=True)
    return True


def swap_in(index_dir: Path, live: Store, shadow: Store) -> None:
    """Replace the live index with the complete shadow one (the module's three steps)."""
    folder = shadow_dir(index_dir)
    replace_contents(live, shadow)
    shadow.close()
    KeywordIndex(index_dir)._swap_in(folder / KeywordIndex.DIRNAME)
    _swap_vectors(VectorIndex(index_dir), VectorIndex(folder))
    shutil.rmtree(folder, ignore_errors=True)


def _swap_vectors(live: VectorIndex, built: VectorIndex) -> None:
    stamp = built.stamp()
    if stamp is None or not built.path.is_file():
        # Nothing was embedded (embeddings off or unavailable): the old file was made from
        # the database just replaced, and its stamp must not vouch for it any more.
        live.stamp_path.unlink(missing_ok=True)
        live.path.unlink(missing_ok=True)
        return
    old = live.stamp() or {}
    if old.get("identity") == stamp.get("identity") and old.get("sha256"):
        # Readers may still hold the old file for a moment: the new stamp vouches for it too,
        # as VectorIndex does when it rewrites the file in place.
        stamp["previous_sha256"] = old["sha256"]
        stamp["previous_count"] = old.get("count")
    with open(built.stamp_path, "w", encoding="utf-8") as handle:
        json.dump(stamp, handle)
        handle.flush()
        os.fsync(handle.fileno())
    # Stamp first, then the file: a reader never meets a file its stamp has not heard of.
    os.replace(built.stamp_path, live.stamp_path)
    os.replace(built.path, live.path)
