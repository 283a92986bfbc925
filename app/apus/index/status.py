"""What `apus memory status` reports about one vault's index, as typed values."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from apus.config import Settings
from apus.embed.base import EmbeddingIdentity, ProbeResult
from apus.index.keyword import KeywordIndex
from apus.index.keyword_freshness import keyword_freshness
from apus.index.last_sync import LastSync, read_last_sync
from apus.index.note_problems import NoteProblem, load_problems
from apus.index.readiness import percent_done
from apus.index.set_aside import SetAside, recorded_set_aside
from apus.index.store import Store
from apus.index.transcript_store import TranscriptStore, TranscriptSummary
from apus.vault import transcripts as tx
from apus.vault.scan import SkippedFile

# "embedding": a first build (nothing to replace); "rebuilding": vectors of an old index
# (another prefix scheme, a forced rebuild) are being replaced.
EmbeddingsStateName = Literal[
    "ready", "embedding", "rebuilding", "keyword-only", "paused", "unavailable", "off"
]


@dataclass(frozen=True)
class EmbeddingsState:
    """Whether search by meaning works now, why not, and what fixes it.

    `done`/`total` count chunks with vectors while the vectors are being built, and
    `coverage` is the share of passages search by meaning already covers then (None: all, or
    none served); the `deep` fields are filled only by `status --deep`, which probes the
    provider once.
    """

    state: EmbeddingsStateName
    reason: str = ""
    fix: str = ""
    identity: EmbeddingIdentity | None = None
    vectors: int | None = None  # vectors in the FAISS file for this identity
    done: int | None = None
    total: int | None = None
    eta_seconds: float | None = None
    describe: dict[str, Any] | None = None  # the provider's own facts (endpoint, device…)
    probe: ProbeResult | None = None
    cache_entries: int | None = None
    coverage: float | None = None

    @property
    def percent(self) -> int | None:
        if self.done is None or not self.total:
            return None
        return percent_done(self.done, self.total)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.identity is not None:
            data.update(
                provider=self.identity.provider,
                model=self.identity.model,
                dims=self.identity.dims,
                prefix_scheme=self.identity.prefix_scheme,
                identity=self.identity.key(),
                vectors=self.vectors or 0,
            )
        data["state"] = self.state
        if self.reason:
            data["reason"] = self.reason
        if self.fix:
            data["fix"] = self.fix
        if self.percent is not None:
            data["progress"] = f"{self.percent}%"
        if self.coverage is not None:
            data["coverage"] = round(self.coverage, 4)
        if self.describe is not None:
            data["describe"] = self.describe
        if self.probe is not None:
            data["probe"] = {
                "ok": self.probe.ok,
                "seconds": round(self.probe.seconds, 3),
                "dims": self.probe.dims,
                "error": self.probe.error,
            }
        if self.cache_entries is not None:
            data["cache_entries"] = self.cache_entries
        return data


@dataclass(frozen=True)
class TranscriptSourceStatus:
    """One source of transcripts: whose they are, its folders, and its indexed sessions."""

    client: str  # "claude-code", "codex", or "paths" (memory.search.sessions.paths)
    roots: tuple[str, ...]
    present: bool  # whether any of its folders exists
    sessions: int


@dataclass(frozen=True)
class SessionsStatus:
    """Indexed agent transcripts: how many, from which sources, and the lines skipped in each
    (malformed JSON, unknown event types, lines over memory.search.sessions.maxLineBytes)."""

    enabled: bool
    summary: TranscriptSummary = field(default_factory=lambda: TranscriptSummary(0, 0, 0, ()))
    sources: tuple[TranscriptSourceStatus, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        summary = self.summary
        return {
            "enabled": self.enabled,
            "files": summary.files,
            "messages": summary.messages,
            "chunks": summary.chunks,
            "sources": [
                {
                    "client": source.client,
                    "roots": list(source.roots),
                    "present": source.present,
                    "sessions": source.sessions,
                }
                for source in self.sources
            ],
            "skipped": sum(item.lines.total for item in summary.skipped),
            "skipped_by_file": [
                {
                    "session_key": item.session_key,
                    "path": item.location,
                    "malformed": item.lines.malformed,
                    "unknown": item.lines.unknown,
                    "oversized": item.lines.oversized,
                }
                for item in summary.skipped
            ],
        }


@dataclass(frozen=True)
class IndexStatus:
    vault: str
    index_dir: str
    indexed: bool
    files: int
    chunks: int
    skipped: tuple[SkippedFile, ...]
    replaced_utf8: tuple[str, ...]
    index_bytes: int
    last_sync: str | None
    provider: str
    keyword: str  # "ready" or why not
    embeddings: EmbeddingsState = field(default_factory=lambda: EmbeddingsState("off"))
    store_set_aside: SetAside | None = None  # a damaged database this index replaced
    sessions: SessionsStatus = field(default_factory=lambda: SessionsStatus(False))
    # Notes indexed without a bad part or skipped for a failure of their own, with the fix.
    problems: tuple[NoteProblem, ...] = ()
    last_sync_outcome: LastSync | None = None  # how the latest sync ended

    def as_dict(self) -> dict[str, Any]:
        fixes = {problem.path: problem.fix for problem in self.problems}
        return {
            "vault": self.vault,
            "index_dir": self.index_dir,
            "indexed": self.indexed,
            "files": self.files,
            "chunks": self.chunks,
            "skipped": [_skipped(s, fixes.get(s.rel_path)) for s in self.skipped],
            "problems": [problem.as_dict() for problem in self.problems],
            "replaced_utf8": list(self.replaced_utf8),
            "index_bytes": self.index_bytes,
            "last_sync": self.last_sync,
            "lastSync": None
            if self.last_sync_outcome is None
            else self.last_sync_outcome.as_dict(),
            "provider": self.provider,
            "keyword": self.keyword,
            "embeddings": self.embeddings.as_dict(),
            "store_set_aside": None
            if self.store_set_aside is None
            else {
                "moved_to": str(self.store_set_aside.moved_to),
                "reason": self.store_set_aside.reason,
            },
            "sessions": self.sessions.as_dict(),
        }


def _skipped(skipped: SkippedFile, fix: str | None) -> dict[str, str]:
    entry = {"path": skipped.rel_path, "reason": skipped.reason}
    if fix:
        entry["fix"] = fix
    return entry


def collect_status(
    settings: Settings,
    embeddings: EmbeddingsState | None = None,
    *,
    last_sync: LastSync | None = None,
    building: str = "",
) -> IndexStatus:
    """The index's own facts; `embeddings` comes from the session, which knows the provider,
    and so may `last_sync` (else the outcome recorded beside the index is read). `building`:
    how far a sync that is reading the notes now has got, which the keyword line says in
    place of a command to run."""
    vault = settings.vault_path()
    index_dir = settings.index_dir()
    base: dict[str, Any] = {
        "last_sync_outcome": last_sync or read_last_sync(index_dir),
        "vault": str(vault),
        "index_dir": str(index_dir),
        "provider": settings.search.provider,
        "embeddings": embeddings or EmbeddingsState("off"),
        "sessions": SessionsStatus(tx.enabled(settings.search)),
    }
    if not Store.exists(index_dir):
        return IndexStatus(
            indexed=False,
            files=0,
            chunks=0,
            skipped=(),
            replaced_utf8=(),
            index_bytes=0,
            last_sync=None,
            keyword=_being_built(building) or "not indexed yet (run `apus memory index`)",
            **base,
        )
    store = Store(index_dir, readonly=True)
    try:
        files, chunks = store.counts()
        if store.has_transcripts():
            # `files` and `chunks` are the notes'; transcripts are counted apart.
            summary = TranscriptStore(store).summary()
            files, chunks = files - summary.files, chunks - summary.chunks
            enabled = base["sessions"].enabled
            found = _transcript_sources(settings, summary) if enabled or summary.files else ()
            base["sessions"] = SessionsStatus(enabled, summary, found)
        skipped = tuple(SkippedFile(p, r) for p, r in store.skipped())
        problems = tuple(load_problems(store).values())
        replaced = tuple(store.files_with_replaced_utf8())
        set_aside = recorded_set_aside(store)
        last = store.get_meta("last_sync")
        generation = store.generation()
    finally:
        store.close()
    keyword_text = _keyword_line(index_dir, generation, building, synced=bool(last))
    size = _folder_bytes(index_dir)
    synced_at = (
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
        last_sync=synced_at,
        keyword=keyword_text,
        store_set_aside=set_aside,
        problems=problems,
        **base,
    )


def _transcript_sources(
    settings: Settings, summary: TranscriptSummary
) -> tuple[TranscriptSourceStatus, ...]:
    """Each configured source with its indexed sessions, and any source whose sessions are
    still indexed after it was taken out of the settings."""
    from apus.vault.transcript_sources import client_of_agent, sources

    counts: dict[str, int] = {}
    for agent, sessions in summary.agents:
        client = client_of_agent(agent)
        counts[client] = counts.get(client, 0) + sessions
    roots: dict[str, list[Path]] = {}
    for source in sources(settings):
        roots.setdefault(source.client, []).append(source.root)
    for client in counts:
        roots.setdefault(client, [])
    return tuple(
        TranscriptSourceStatus(
            client,
            tuple(str(root) for root in folders),
            any(root.is_dir() for root in folders),
            counts.get(client, 0),
        )
        for client, folders in roots.items()
    )


def _keyword_line(index_dir: Path, generation: int, building: str, *, synced: bool) -> str:
    """What status says of the keyword index: ready, or why not, or how far it is built."""
    if building:
        # It covers the notes read so far, not the vault: not "ready", nor a command to run.
        if synced:
            return f"being brought up to date by another Apus process ({building})"
        return _being_built(building)
    freshness = keyword_freshness(KeywordIndex(index_dir), generation)
    if freshness.state == "unusable":
        return f"needs a rebuild ({freshness.reason}); the next sync or search rebuilds it"
    if freshness.state == "behind":
        return "behind the store; the next sync or search brings it up to date"
    return "ready"


def _being_built(building: str) -> str:
    return f"being built by another Apus process ({building})" if building else ""


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
