"""A vault for a test: its notes written, the real CLI run on it, its settings, sync and
searches through the session, its store read, its files hashed."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from apus.config import Settings, load_settings
from apus.index.status import EmbeddingsState
from apus.index.store import Store
from apus.indexing.request import SyncRequest
from apus.indexing.sync import SyncReport
from apus.memory import Memory
from apus.search.options import SearchOptions
from apus.search.results import SearchHit, SearchResponse

# The CLI exactly as a shell runs it, in this interpreter (so the venv's packages are used).
APUS = [
    sys.executable,
    "-c",
    "import sys; from apus.cli import main; sys.exit(main(prog_name='apus'))",
]


def write_note(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def cli_env(**extra: str) -> dict[str, str]:
    """The test's isolated environment (XDG_* from conftest) with embeddings off."""
    env = dict(os.environ)
    env["APUS_MEMORY__SEARCH__PROVIDER"] = "none"
    env.update(extra)
    return env


def run_apus(
    *args: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    expect: int | None = 0,
    timeout: float = 120,
    program: Sequence[str] = APUS,
) -> subprocess.CompletedProcess[str]:
    """Run `apus ARGS` in a subprocess; check the exit status unless `expect` is None."""
    result = subprocess.run(
        [*program, *(str(a) for a in args)],
        env=dict(env) if env is not None else cli_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
    )
    if expect is not None:
        assert result.returncode == expect, (
            f"apus {' '.join(map(str, args))} exited {result.returncode}, wanted {expect}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result


def run_json(
    *args: str | os.PathLike[str], env: Mapping[str, str] | None = None, timeout: float = 120
) -> Any:
    return json.loads(run_apus(*args, env=env, timeout=timeout).stdout)


def make_settings(vault: Path, env: Mapping[str, str] | None = None, **flags: Any) -> Settings:
    """Settings as the CLI would build them for `--vault VAULT`, embeddings off.

    `flags` are dotted keys with `.` written as `__` (`memory__search__sync__maxFileBytes`).
    """
    environ = {"APUS_MEMORY__SEARCH__PROVIDER": "none", **(env or {})}
    overrides: dict[str, Any] = {"vault": str(vault.resolve())}
    overrides.update({key.replace("__", "."): value for key, value in flags.items()})
    return load_settings(environ=environ, overrides=overrides)


def sync(settings: Settings, request: SyncRequest | None = None, **kwargs: Any) -> SyncReport:
    """One sync with the settings' own provider, as `apus memory index` runs it."""
    with Memory(settings=settings) as memory:
        return memory.sync(request, **kwargs)


# What a sync reads from os.environ, not from the settings (the config file, the data and
# index folders, the test holds): an index run in this process sees this process's values.
# (APUS_TODAY is read by searches only.)
_PROCESS_WIDE = ("APUS_CONFIG", "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                 "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "APUS_TEST_HOLD", "APUS_TEST_HOLD_AT",
                 "APUS_PROBE_TIMEOUT_S")  # fmt: skip


def index_vault(vault: Path, env: Mapping[str, str] | None = None) -> SyncReport:
    """`apus --vault VAULT memory index` with `env` (the test's environment, embeddings off,
    when None), run in this process through the session as the command runs it, and held
    to the command's exit status 0: not stopped, embeddings complete where asked for.

    For a test whose subject is what comes after the index (a search, the agent server, a
    hook): a separate `apus memory index` costs a second of CPU, mostly loading the
    language model again (`apus.vault.language`), which this process loads once. Tests of
    the command itself run it (`run_apus`)."""
    environ = dict(env) if env is not None else cli_env()
    for name in _PROCESS_WIDE:
        assert environ.get(name) == os.environ.get(name), (
            f"{name} differs from this process's: run `apus memory index` with run_apus"
        )
    assert environ.get("APUS_MEMORY__SEARCH__PROVIDER") == "none", (
        "a managed embedding server started here stops when the index is done; run "
        "`apus memory index` with run_apus so that the next command finds it running"
    )
    report = sync(load_settings(environ=environ, overrides={"vault": os.path.abspath(vault)}))
    assert not report.cancelled and report.embedding.ok, report.as_json()
    return report


def search_response(settings: Settings, query: str, **options: Any) -> SearchResponse:
    """One search as `apus memory search` runs it (through the session)."""
    with Memory(settings=settings) as memory:
        return memory.search(query, SearchOptions(**options))


def search(settings: Settings, query: str, limit: int = 10, **options: Any) -> list[SearchHit]:
    return search_response(settings, query, limit=limit, **options).hits


def embeddings(settings: Settings) -> EmbeddingsState:
    with Memory(settings=settings) as memory:
        return memory.embeddings()


def search_paths(settings: Settings, query: str, limit: int = 10) -> list[str]:
    return [hit.path for hit in search(settings, query, limit)]


def open_store(settings: Settings) -> Store:
    return Store(settings.index_dir(), readonly=True)


def chunk_ids_of(settings: Settings, rel_path: str) -> list[int]:
    store = open_store(settings)
    try:
        record = store.file_by_path(rel_path)
        assert record is not None, f"{rel_path} is not in the store"
        return sorted(store.chunk_ids_of_files([record.id]))
    finally:
        store.close()


def stored_paths(settings: Settings) -> set[str]:
    store = open_store(settings)
    try:
        return set(store.files())
    finally:
        store.close()


def generation(settings: Settings) -> int:
    store = open_store(settings)
    try:
        return store.generation()
    finally:
        store.close()


def vault_digest(root: Path) -> dict[str, str]:
    """Every entry under `root` (links not followed) with its content hash or kind."""
    digest: dict[str, str] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                digest[rel] = f"link -> {os.readlink(path)}"
            elif stat.S_ISDIR(mode):
                digest[rel] = f"dir {stat.S_IMODE(mode):o}"
            elif stat.S_ISREG(mode):
                content = hashlib.sha256(path.read_bytes()).hexdigest()
                digest[rel] = f"file {stat.S_IMODE(mode):o} {content} {path.lstat().st_mtime_ns}"
            else:
                digest[rel] = f"special {stat.S_IFMT(mode):o}"
    return digest


def local_model_settings(
    vault: Path, model: Path, monkeypatch: pytest.MonkeyPatch, **env: str
) -> Settings:
    """The managed local server on `model`, configured through the environment so that
    background `apus` processes a test starts see the same settings; `env` adds or
    overrides keys (a prefix scheme left over from an earlier call is cleared)."""
    monkeypatch.delenv("APUS_MEMORY__SEARCH__LOCAL__PREFIXSCHEME", raising=False)
    monkeypatch.setenv("APUS_VAULT", str(vault))
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "local")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__LOCAL__MODELPATH", str(model))
    monkeypatch.setenv("APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE", "512")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return load_settings()
