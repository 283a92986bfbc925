"""`apus bench sessions`: transcript indexing throughput, the cost of an append, and exact
search latency, on generated transcripts (keyword only: no embeddings are made), in the
layout and line format of configured roots or of Claude Code's or Codex's own folders."""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from apus.benchmarks.measure import peak_rss_mb, percentile
from apus.config import Settings, load_settings
from apus.index.store import Store
from apus.indexing.transcripts import sync_transcripts
from apus.memory import Memory

# Agents the generated sessions are spread over, and a Zipf-like vocabulary: a few words are
# in most messages, most words in few, as in real conversations.
_AGENTS = 8
_VOCABULARY = 6000
_WORDS_PER_MESSAGE = (8, 80)
# Single appends timed one after another (each is one sync of the whole set).
_APPEND_REPEATS = 15


# The folder under the scratch one each client's transcripts are written to, and the variable
# that points the client's discovery at it.
CLIENT_FOLDERS = {"paths": "agents", "claude-code": "claude", "codex": "codex"}
_CLIENT_HOME = {"claude-code": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}


@dataclass(frozen=True)
class SessionsBenchResult:
    client: str
    sessions: int
    messages: int
    chunks: int
    step_seconds: float  # the transcript step alone: read, chunk, SQLite and FTS5
    cold_seconds: float  # a whole first sync: the step, then the keyword index built
    peak_rss_mb: float
    resync_seconds: float  # nothing changed
    append_one_ms: list[float]  # one exchange appended to one transcript, then a sync
    append_many_seconds: float  # one exchange appended to each of `append_many` transcripts
    append_many: int
    search_ms: list[float]
    queries: int

    @property
    def messages_per_s(self) -> float:
        return self.messages / self.cold_seconds if self.cold_seconds else 0.0

    @property
    def step_messages_per_s(self) -> float:
        return self.messages / self.step_seconds if self.step_seconds else 0.0


def _step_seconds(settings: Settings, index_dir: Path) -> float:
    """The transcript step into an empty store, without the keyword index."""
    store = Store(index_dir)
    try:
        started = time.perf_counter()
        sync_transcripts(store, settings, force=False, mirror=None)
        return time.perf_counter() - started
    finally:
        store.close()


def _vocabulary(rng: random.Random) -> list[str]:
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < _VOCABULARY:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class _Talk:
    """Seeded, Zipf-distributed message text."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = _vocabulary(self.rng)
        self.weights = [1 / (rank + 1) for rank in range(len(self.words))]

    def text(self) -> str:
        count = self.rng.randint(*_WORDS_PER_MESSAGE)
        return " ".join(self.rng.choices(self.words, self.weights, k=count))


def _timestamp(minute: int) -> str:
    return f"2026-11-{1 + minute // 1440 % 28:02d}T{minute // 60 % 24:02d}:{minute % 60:02d}:00Z"


def _message(client: str, session: str, number: int, role: str, text: str, minute: int) -> str:
    """Message `number` of a session, as the client writes it."""
    when = _timestamp(minute)
    if client == "claude-code":
        content: object = text if role == "user" else [{"type": "text", "text": text}]
        event: dict[str, object] = {
            "parentUuid": f"{session}-m{number - 1}" if number else None,
            "isSidechain": False,
            "type": role,
            "message": {"role": role, "content": content},
            "uuid": f"{session}-m{number}",
            "timestamp": when,
            "userType": "external",
            "cwd": "/home/bench/project",
            "sessionId": session,
            "version": "2.1.197",
        }
    elif client == "codex":
        kind = "input_text" if role == "user" else "output_text"
        event = {
            "timestamp": when,
            "type": "response_item",
            "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
        }
    else:
        event = {
            "type": "message",
            "id": f"m{number}",
            "parentId": f"m{number - 1}" if number else None,
            "timestamp": when,
            "message": {"role": role, "content": [{"type": "text", "text": text}]},
        }
    return json.dumps(event) + "\n"


def _session_path(client: str, root: Path, index: int) -> tuple[Path, str]:
    """Where session `index` is written in the client's layout, and its id."""
    if client == "claude-code":
        session = f"00000000-0000-4000-8000-{index:012d}"
        return root / "projects" / f"-bench-project{index % _AGENTS}" / f"{session}.jsonl", session
    if client == "codex":
        session = f"00000000-0000-7000-8000-{index:012d}"
        name = f"rollout-2026-11-01T00-00-00-{session}.jsonl"
        return root / "sessions" / "2026" / "11" / f"{1 + index % 28:02d}" / name, session
    return root / f"agent{index % _AGENTS}" / "sessions" / f"s{index:05d}.jsonl", f"s{index:05d}"


def _header(client: str, session: str) -> str:
    if client == "claude-code":
        return ""  # its sessions have no header line
    if client == "codex":
        meta = {"id": session, "timestamp": "2026-11-01T00:00:00Z", "cwd": "/home/bench/project"}
        event: dict[str, object] = {
            "timestamp": "2026-11-01T00:00:00Z",
            "type": "session_meta",
            "payload": meta,
        }
    else:
        event = {"type": "session", "id": session, "timestamp": "2026-11-01T00:00:00Z"}
    return json.dumps(event) + "\n"


def generate(root: Path, sessions: int, messages: int, seed: int = 7, client: str = "paths") -> int:
    """Write `sessions` transcripts of `messages` messages under `root`, in the layout and
    format of `client`; returns messages."""
    talk = _Talk(seed)
    for index in range(sessions):
        path, session = _session_path(client, root, index)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = [_header(client, session)]
        for number in range(messages):
            role = "user" if number % 2 == 0 else "assistant"
            body.append(_message(client, session, number, role, talk.text(), index * 7 + number))
        path.write_text("".join(body), encoding="utf-8")
    return sessions * messages


def _append_exchange(client: str, path: Path, talk: _Talk) -> None:
    with open(path, encoding="utf-8") as handle:
        count = sum(1 for _ in handle) - (0 if client == "claude-code" else 1)
    session = path.stem.removeprefix("rollout-2026-11-01T00-00-00-")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(_message(client, session, count, "user", talk.text(), count))
        handle.write(_message(client, session, count + 1, "assistant", talk.text(), count + 1))


def _settings(vault: Path, client: str, transcripts: Path, index_dir: Path) -> Settings:
    environ = {
        "APUS_MEMORY__SEARCH__PROVIDER": "none",
        "APUS_MEMORY__SEARCH__EXPERIMENTAL__SESSIONMEMORY": "true",
        "APUS_MEMORY__SEARCH__SOURCES": '["memory", "sessions"]',
    }
    # Only the generated transcripts: never the machine's own clients' sessions.
    overrides = {
        "vault": str(vault),
        "memory.search.sessions.paths": [str(transcripts)] if client == "paths" else [],
        "memory.search.sessions.clients": [] if client == "paths" else [client],
        "memory.search.store.path": str(index_dir),
    }
    return load_settings(environ=environ, overrides=overrides)


@contextmanager
def _client_home(client: str, folder: Path) -> Iterator[None]:
    """The client's folder variable pointed at the generated transcripts meanwhile."""
    name = _CLIENT_HOME.get(client)
    if name is None:
        yield
        return
    before = os.environ.get(name)
    os.environ[name] = str(folder)
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


def _queries(talk: _Talk, count: int) -> list[str]:
    """Words of every frequency, pairs, and quoted phrases."""
    rng = talk.rng
    queries = []
    for number in range(count):
        first, second = rng.choices(talk.words[:2000], k=2)
        queries.append([first, f"{first} {second}", f'"{first} {second}"'][number % 3])
    return queries


def run_sessions_bench(
    scratch: Path,
    *,
    sessions: int,
    messages: int,
    queries: int,
    append_many: int,
    client: str = "paths",
) -> SessionsBenchResult:
    transcripts, vault = scratch / CLIENT_FOLDERS[client], scratch / "vault"
    vault.mkdir(parents=True, exist_ok=True)
    (vault / "README.md").write_text("# Bench\n\nNotes are not what is measured here.\n")
    total = generate(transcripts, sessions, messages, client=client)
    settings = _settings(vault, client, transcripts, scratch / "index")
    with _client_home(client, transcripts):
        return _measure(
            settings, scratch, transcripts, client, sessions, total, queries, append_many
        )


def _measure(
    settings: Settings,
    scratch: Path,
    transcripts: Path,
    client: str,
    sessions: int,
    total: int,
    queries: int,
    append_many: int,
) -> SessionsBenchResult:
    step = _step_seconds(settings, scratch / "step-only")
    with Memory(settings=settings) as memory:
        started = time.perf_counter()
        cold = memory.sync()
        cold_seconds = time.perf_counter() - started
        if cold.sessions.added != sessions:
            raise RuntimeError(f"{cold.sessions.added} of {sessions} transcripts were indexed")
        rss = peak_rss_mb()
        started = time.perf_counter()
        memory.sync()
        resync = time.perf_counter() - started
        talk = _Talk(seed=11)
        paths = sorted(transcripts.rglob("*.jsonl"))
        one: list[float] = []
        for repeat in range(_APPEND_REPEATS):
            _append_exchange(client, paths[repeat * 37 % len(paths)], talk)
            started = time.perf_counter()
            memory.sync()
            one.append((time.perf_counter() - started) * 1000)
        for path in paths[:append_many]:
            _append_exchange(client, path, talk)
        started = time.perf_counter()
        memory.sync()
        many = time.perf_counter() - started
        timings = []
        for query in _queries(talk, queries):
            started = time.perf_counter()
            memory.sessions_search(query, limit=10)
            timings.append((time.perf_counter() - started) * 1000)
        status = memory.status().sessions.summary
    return SessionsBenchResult(
        client=client,
        sessions=sessions,
        messages=total,
        chunks=status.chunks,
        step_seconds=step,
        cold_seconds=cold_seconds,
        peak_rss_mb=rss,
        resync_seconds=resync,
        append_one_ms=one,
        append_many_seconds=many,
        append_many=append_many,
        search_ms=timings,
        queries=queries,
    )


def summary_lines(r: SessionsBenchResult) -> list[str]:
    return [
        f"transcripts           {r.sessions} ({r.messages} messages, {r.chunks} chunks; "
        f"{r.client} format)",
        f"transcript step       {r.step_seconds:.2f} s  ({r.step_messages_per_s:.0f} messages/s: "
        "read, chunk, SQLite, FTS5)",
        f"cold index            {r.cold_seconds:.2f} s  ({r.messages_per_s:.0f} messages/s with "
        f"the keyword index; peak RSS {r.peak_rss_mb:.0f} MB)",
        f"no-change re-sync     {r.resync_seconds * 1000:.0f} ms",
        f"append 2 messages     median {statistics.median(r.append_one_ms):.0f} ms per sync "
        f"(p95 {percentile(r.append_one_ms, 95):.0f} ms, {len(r.append_one_ms)} syncs)",
        f"append to {r.append_many:<5}       {r.append_many_seconds:.2f} s "
        f"({r.append_many_seconds / max(1, r.append_many) * 1000:.1f} ms per transcript)",
        f"sessions search       p50 {percentile(r.search_ms, 50):.2f} ms  "
        f"p95 {percentile(r.search_ms, 95):.2f} ms  ({r.queries} queries)",
    ]
