"""What `apus memory status` reports about one vault's index."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apus.config import Settings
from apus.index.keyword import KeywordIndex
from apus.index.store import Store


@dataclass(frozen=True)
class IndexStatus:
    vault: str
    index_dir: str
    indexed: bool
    files: int
    chunks: int
    skipped: list[dict[str, str]]
    replaced_utf8: list[str]
    index_bytes: int
    last_sync: str | None
    provider: str
    keyword: str  # "ready" or why not
    embeddings: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "vault": self.vault,
            "index_dir": self.index_dir,
            "indexed": self.indexed,
            "files": self.files,
            "chunks": self.chunks,
            "skipped": self.skipped,
            "replaced_utf8": self.replaced_utf8,
            "index_bytes": self.index_bytes,
            "last_sync": self.last_sync,
            "provider": self.provider,
            "keyword": self.keyword,
            "embeddings": self.embeddings,
        }


def collect_status(settings: Settings, embeddings: dict[str, Any] | None = None) -> IndexStatus:
    vault = settings.vault_path()
    index_dir = settings.index_dir()
    base: dict[str, Any] = {
        "vault": str(vault),
        "index_dir": str(index_dir),
        "provider": settings.search.provider,
        "embeddings": embeddings or {},
    }
    if not Store.exists(index_dir):
        return IndexStatus(
            indexed=False,
            files=0,
            chunks=0,
            skipped=[],
            replaced_utf8=[],
            index_bytes=0,
            last_sync=None,
            keyword="not indexed yet (run `apus memory index`)",
            **base,
        )
    store = Store(index_dir, readonly=True)
    try:
        files, chunks = store.counts()
        skipped = [{"path": p, "reason": r} for p, r in store.skipped()]
        replaced = store.files_with_replaced_utf8()
        last = store.get_meta("last_sync")
        generation = store.generation()
    finally:
        store.close()
    keyword = KeywordIndex(index_dir)
    state = keyword.state()
    if not state.usable:
        keyword_text = f"rebuilding on next search ({state.reason})"
    elif state.generation != generation:
        keyword_text = "behind the store; brought up to date on next search"
    else:
        keyword_text = "ready"
    size = _folder_bytes(index_dir)
    last_sync = (
        dt.datetime.fromtimestamp(float(last), tz=dt.UTC).astimezone().isoformat(timespec="seconds")
        if last
        else None
    )
    return IndexStatus(
        indexed=True,
        files=files,
        chunks=chunks,
        skipped=skipped,
        replaced_utf8=replaced,
        index_bytes=size,
        last_sync=last_sync,
        keyword=keyword_text,
        **base,
    )


def _folder_bytes(folder: Path) -> int:
    """Bytes under `folder`; files a running writer swaps away mid-walk are skipped."""
    total = 0
    for dirpath, _dirs, names in os.walk(folder):
        for name in names:
            try:
                total += os.stat(os.path.join(dirpath, name), follow_symlinks=False).st_size
            except OSError:
                continue
    return total
