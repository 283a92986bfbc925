"""The keyword index's part of a sync: made empty at the start of a first index, so searches
find each batch once it is committed; or rebuilt from the store once every note is written."""

from __future__ import annotations

import threading

from apus.index.keyword import KeywordIndex
from apus.index.sqlite import IndexWriteError
from apus.index.store import Store
from apus.indexing.progress import ProgressCallback, SyncProgress
from apus.indexing.run import SyncCancelled, SyncRun


def start_growing(store: Store, keyword: KeywordIndex, run: SyncRun) -> None:
    """A first index: an empty keyword index now, which the writer grows batch by batch; one
    that cannot be made is built at the end instead, as for any rebuild."""
    try:
        keyword.rebuild(store)  # nothing stored yet: empty, stamped with the generation
    except (OSError, IndexWriteError):
        run.keyword_failed()


def rebuild_keyword(
    store: Store, keyword: KeywordIndex, cancel: threading.Event | None, emit: ProgressCallback
) -> None:
    """The keyword index built anew from the store, telling its progress."""
    emit(SyncProgress("keyword", 0, store.counts()[1]))
    try:
        keyword.rebuild(
            store, cancel=cancel, progress=lambda d, t: emit(SyncProgress("keyword", d, t))
        )
    except InterruptedError as exc:  # the rebuild's own way of saying "cancelled"
        raise SyncCancelled from exc
