"""`apus doctor`: what a support thread would ask for, checked in one go.

Config (and where it came from), the notes folder, the index (SQLite quick_check, the keyword
stamp, FAISS against the store), the last sync (fails while a failure stands) and the notes
that could not be indexed whole, and embeddings (`doctor_embedding.py`). Every check reads;
none repairs or rewrites anything, so running it on a damaged index is safe.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from apus.config import Settings, SettingsSource
from apus.errors import ApusError
from apus.index.identity import stored_identity
from apus.index.keyword import KeywordIndex
from apus.index.keyword_freshness import keyword_freshness
from apus.index.last_sync import read_last_sync
from apus.index.note_problems import load_problems
from apus.index.set_aside import damage_of
from apus.index.store import Store
from apus.index.vectors import VectorIndex
from apus.memory.doctor_embedding import check_embedding
from apus.memory.doctor_report import Check, DoctorReport
from apus.vault.scan import scan_roots

_REBUILD_FIX = "apus memory index --force"


def run_doctor(source: SettingsSource) -> DoctorReport:
    """Every check; one that cannot run because an earlier one failed says so."""
    config, settings = _check_config(source)
    if settings is None:
        skipped = "not checked: the settings did not load"
        return DoctorReport(
            (config, *(Check(name, False, skipped) for name in ("vault", "index", "embedding")))
        )
    vault = _check_vault(settings)
    if not vault.ok:
        skipped = "not checked: the notes folder is not usable"
        return DoctorReport(
            (config, vault, Check("index", False, skipped), Check("embedding", False, skipped))
        )
    index = _check_index(settings)
    embedding = check_embedding(settings)
    return DoctorReport((config, vault, index, _check_sync(settings), embedding))


def _check_sync(settings: Settings) -> Check:
    """The last sync's outcome, and the notes it could not index whole (each with its fix)."""
    index_dir = settings.index_dir()
    outcome = read_last_sync(index_dir)
    facts: dict[str, Any] = {"lastSync": None if outcome is None else outcome.as_dict()}
    if outcome is not None and not outcome.ok:
        detail = (
            f"the last sync failed at {outcome.as_dict()['at']} ({outcome.failures} in a "
            f"row): {outcome.error}; search serves the index as it was before"
        )
        return Check("sync", False, detail, outcome.fix or "apus memory index", facts)
    if outcome is not None and outcome.recovered is not None:
        return Check("sync", False, outcome.recovered.sentence(), outcome.recovered.fix, facts)
    problems = []
    if Store.exists(index_dir):
        try:
            store = Store(index_dir, readonly=True)
        except ApusError:  # a damaged database: the index check says so
            store = None
        if store is not None:
            try:
                problems = list(load_problems(store).values())
            except ApusError:
                problems = []
            finally:
                store.close()
    facts["problems"] = [problem.as_dict() for problem in problems]
    if problems:
        listed = "; ".join(f"{p.path}: {p.reason}" for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        return Check(
            "sync",
            False,
            f"{len(problems)} note(s) not indexed whole, the rest is: {listed}{more}",
            problems[0].fix,
            facts,
        )
    when = "never ran" if outcome is None else f"last sync ok at {outcome.as_dict()['at']}"
    return Check("sync", True, f"{when}; every note indexed whole", facts=facts)


def _check_config(source: SettingsSource) -> tuple[Check, Settings | None]:
    file = source.file
    origin = [f"{file} ({'found' if file.is_file() else 'not found: defaults'})"]
    env = sorted(name for name in os.environ if name.startswith("APUS_"))
    if env:
        origin.append(f"environment: {', '.join(env)}")  # names only: values may be keys
    if source.vault is not None:
        origin.append("--vault")
    facts: dict[str, Any] = {"file": str(file), "file_found": file.is_file(), "environment": env}
    try:
        settings = source.load()
    except ApusError as exc:
        return Check("config", False, exc.reason, exc.fix, facts), None
    facts["provider"] = settings.search.provider
    return Check("config", True, "; ".join(origin), facts=facts), settings


def _check_vault(settings: Settings) -> Check:
    try:
        vault = settings.vault_path()
        scan = scan_roots(
            vault,
            settings.extra_roots(),
            max_file_bytes=settings.search.sync.max_file_bytes,
            cross_devices=settings.search.sync.cross_devices,
        )
    except ApusError as exc:
        return Check("vault", False, exc.reason, exc.fix)
    except OSError as exc:
        return Check(
            "vault", False, f"the notes folder cannot be read: {exc}", "apus --vault PATH doctor"
        )
    facts = {"path": str(vault), "notes": len(scan.files), "skipped": len(scan.skipped)}
    detail = f"{vault}: {len(scan.files)} notes readable"
    if scan.skipped:
        detail += f", {len(scan.skipped)} skipped (see `apus memory status`)"
    return Check("vault", True, detail, facts=facts)


def _check_index(settings: Settings) -> Check:
    index_dir = settings.index_dir()
    if not Store.exists(index_dir):
        return Check(
            "index", True, "not indexed yet", "apus memory index", {"path": str(index_dir)}
        )
    damage = damage_of(index_dir)
    if damage is not None:
        return Check(
            "index",
            False,
            f"the index database is damaged ({damage}); it is rebuilt from the notes",
            _REBUILD_FIX,
            {"path": str(index_dir), "quick_check": damage},
        )
    try:
        return _index_facts(index_dir)
    except ApusError as exc:
        return Check("index", False, exc.reason, exc.fix or _REBUILD_FIX)


def _index_facts(index_dir: Path) -> Check:
    store = Store(index_dir, readonly=True)
    try:
        files, chunks = store.counts()
        generation = store.generation()
        identity = stored_identity(store)
        stored = store.vector_count(identity.key()) if identity is not None else 0
    finally:
        store.close()
    facts: dict[str, Any] = {
        "path": str(index_dir),
        "quick_check": "ok",
        "files": files,
        "chunks": chunks,
    }
    problems = []
    keyword = keyword_freshness(KeywordIndex(index_dir), generation)
    if keyword.state == "unusable":
        problems.append(f"keyword index: {keyword.reason}")
    elif keyword.state == "behind":
        problems.append("keyword index is behind the store")
    facts["keyword"] = "ok" if not problems else problems[0]
    if identity is not None:
        vectors = VectorIndex(index_dir)
        key = vectors.stamped_key(identity.key())  # whatever width the settings chose
        health = vectors.health(key)
        on_disk = vectors.count(key)
        if not health.usable:
            problems.append(f"vectors.faiss: {health.reason}")
        elif on_disk != stored:
            problems.append(f"vectors.faiss holds {on_disk} vectors, the store {stored}")
        facts["vectors"] = {"store": stored, "faiss": on_disk, "faiss_state": health.state}
    detail = f"{files} notes, {chunks} chunks; quick_check ok"
    if problems:
        return Check(
            "index", False, f"{detail}; " + "; ".join(problems), "apus memory index", facts
        )
    return Check("index", True, f"{detail}; keyword and vector files match the store", facts=facts)
