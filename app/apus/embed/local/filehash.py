"""sha256 (and other facts) of model files, remembered by (path, size, mtime, ctime) so a
300 MB file is hashed once (and again whenever its inode changes: size and mtime can be put
back, ctime cannot)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apus import paths

_BLOCK = 1 << 20


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def cache_file() -> Path:
    return paths.models_dir() / "sha256-cache.json"


def cached_sha256(path: Path) -> str:
    """The file's sha256, computed only if the file changed since it was last hashed."""
    return str(cached_fact(path, "sha256", lambda: file_sha256(path)))


def cached_fact(path: Path, name: str, compute: Callable[[], Any]) -> Any:
    """A JSON value derived from the file's bytes (its sha256, its GGUF header), computed
    only if the file changed since it was last remembered; what `compute` raises is not."""
    resolved = str(path.resolve())
    stat = path.stat()
    identity = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "ctime_ns": stat.st_ctime_ns}
    entries = _load()
    entry = entries.get(resolved)
    same = isinstance(entry, dict) and all(entry.get(k) == v for k, v in identity.items())
    if same and isinstance(entry, dict) and name in entry:
        return entry[name]
    value = compute()
    kept = entry if same and isinstance(entry, dict) else {}
    entries[resolved] = {**kept, **identity, name: value}
    _save(entries)
    return value


def _load() -> dict[str, object]:
    try:
        data = json.loads(cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save(entries: dict[str, object]) -> None:
    target = cache_file()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):  # no writable cache only costs a re-hash next time
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(entries), encoding="utf-8")
        os.replace(tmp, target)
