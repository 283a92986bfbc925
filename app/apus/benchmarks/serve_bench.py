"""`apus bench serve`: many agents on one `apus mcp --http`, against the same calls from one.

A copy of the corpus becomes a scratch vault (the corpus is never written), indexed first,
then served by a real `apus mcp --http --writable` subprocess. Each round runs one list of
calls — searches (each third one followed by a `memory_get` of its top citation, as an agent
reads around a hit) and entries written by `writers` clients — from one client, then from
`clients` clients at once (writers included), alternating rounds on the same warm server.
It prints throughput, latency p50/p95/p99 per tool, errors, the server's and the clients'
CPU; then it checks that every entry written is in its note exactly once and is found by
a search for its marker word.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import string
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from apus.benchmarks.measure import percentile
from apus.relaunch import own_command

Mode = Literal["keyword", "hybrid"]
Say = Callable[[str], None]

# Only a guard against a hang: the server says when it serves.
_START_PATIENCE_S = 300.0
_READY = re.compile(r"Apus memory over MCP at (http://\S+)")
_DAILY = re.compile(r"memory/\d{4}-\d{2}-\d{2}\.md")
# Markers of written entries: letters only, so one is one keyword term, found by nothing else.
_MARKER_LETTERS = string.ascii_lowercase
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Call:
    tool: Literal["memory_search", "memory_write"]
    text: str  # the query, or the entry


@dataclass(frozen=True)
class Timed:
    tool: str
    seconds: float
    error: str = ""


@dataclass
class RoundFigures:
    """One round of one configuration: how long the calls took, and the CPU they cost."""

    clients: int
    wall_s: float
    timed: list[Timed]
    server_cpu_s: float
    client_cpu_s: float

    @property
    def calls(self) -> int:
        return len(self.timed)

    @property
    def errors(self) -> list[Timed]:
        return [t for t in self.timed if t.error]

    @property
    def throughput(self) -> float:
        return self.calls / self.wall_s if self.wall_s else 0.0


@dataclass
class ModeFigures:
    """The rounds of one mode (server settings), one client and many, and the check of the
    entries written."""

    mode: Mode
    files: int
    chunks: int
    index_s: float
    rounds: list[RoundFigures] = field(default_factory=list)
    written: int = 0
    missing: list[str] = field(default_factory=list)  # not in the note
    doubled: list[str] = field(default_factory=list)  # more than once
    not_found: list[str] = field(default_factory=list)  # no search finds it

    def of(self, clients: int) -> list[RoundFigures]:
        return [r for r in self.rounds if r.clients == clients]


@dataclass(frozen=True)
class ServeBenchResult:
    clients: int
    writers: int
    searches: int
    writes: int
    modes: list[ModeFigures]


def run_serve_bench(
    corpus: Path,
    scratch: Path,
    *,
    modes: Sequence[Mode],
    model: Path | None,
    notes: int,
    clients: int,
    writers: int,
    searches: int,
    writes: int,
    rounds: int,
    say: Say,
) -> ServeBenchResult:
    """Every mode on its own server and scratch vault (see the module)."""
    figures = []
    for mode in modes:
        root = scratch / mode
        vault = _scratch_vault(corpus, root / "vault", notes)
        env = _server_env(root, mode, model)
        say(f"{mode}: indexing {vault} …")
        started = time.perf_counter()
        _apus(env, "--vault", str(vault), "memory", "index", "--json")
        index_s = time.perf_counter() - started
        files, chunks, queries = _vault_facts(env, vault, searches)
        result = ModeFigures(mode, files, chunks, index_s)
        with _server(env, vault) as server:
            say(f"{mode}: {files} notes, {chunks} passages, served at {server.url}")
            for number in range(rounds):
                for count in (1, clients):
                    calls = _calls(queries, writes, f"{mode}{number}{count}")
                    figures_of_round = asyncio.run(_round(server, calls, count, writers))
                    result.rounds.append(figures_of_round)
                    result.written += sum(call.tool == "memory_write" for call in calls)
                    say(
                        f"{mode}: round {number + 1}, {count} client(s): "
                        f"{figures_of_round.throughput:.1f} calls/s, "
                        f"{len(figures_of_round.errors)} errors"
                    )
                    asyncio.run(_check_written(server.url, vault, calls, result))
        figures.append(result)
    return ServeBenchResult(clients, writers, searches, writes, figures)


# -- the scratch vault and its server -----------------------------------------------------


def _scratch_vault(corpus: Path, vault: Path, notes: int) -> Path:
    """The first `notes` Markdown files of the corpus (by path; 0: all of them), copied."""
    if vault.exists():
        shutil.rmtree(vault)
    files = sorted(p for p in corpus.rglob("*.md") if p.is_file())
    for source in files[:notes] if notes else files:
        target = vault / source.relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    vault.mkdir(parents=True, exist_ok=True)
    return vault


def _server_env(root: Path, mode: Mode, model: Path | None) -> dict[str, str]:
    """The bench's own config, index, logs and runtime folders; embeddings off (keyword) or
    on the given model (hybrid); writing on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("APUS_")}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        folder = root / name.lower()
        folder.mkdir(parents=True, exist_ok=True)
        env[name] = str(folder)
    runtime = root / "runtime"
    runtime.mkdir(mode=0o700, parents=True, exist_ok=True)
    env["XDG_RUNTIME_DIR"] = str(runtime)
    env["APUS_MEMORY__WRITE__ENABLED"] = "true"
    # Named, not left to the data folder: this process reads the index too.
    env["APUS_MEMORY__SEARCH__STORE__PATH"] = str(root / "index")
    if mode == "keyword":
        env["APUS_MEMORY__SEARCH__PROVIDER"] = "none"
    else:
        assert model is not None
        env["APUS_MEMORY__SEARCH__PROVIDER"] = "local"
        env["APUS_MEMORY__SEARCH__LOCAL__MODELPATH"] = str(model.resolve())
    return env


def _apus(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [*own_command("apus.cli"), *args], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 3):  # 3: embeddings incomplete (said in the figures)
        raise RuntimeError(f"apus {' '.join(args)} failed: {done.stderr.strip()[-2000:]}")
    return done.stdout


def _vault_facts(env: dict[str, str], vault: Path, count: int) -> tuple[int, int, list[str]]:
    """Notes and passages indexed, and `count` queries of 1-3 words from random passages."""
    from apus.benchmarks.search_bench import sample_queries
    from apus.config import load_settings
    from apus.index.store import Store

    settings = load_settings(environ=env, overrides={"vault": str(vault)})
    store = Store(settings.index_dir(), readonly=True)
    try:
        files, chunks = store.counts()
        return files, chunks, sample_queries(store, count)
    finally:
        store.close()


class _Server:
    """`apus mcp --http --writable` on a free port; stderr read as it comes."""

    def __init__(self, env: dict[str, str], vault: Path) -> None:
        command = [*own_command("apus.cli"), "--vault", str(vault), "mcp", "--http"]
        self.process = subprocess.Popen(
            [*command, "--port", "0", "--writable"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = ""
        self.said: list[str] = []
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.said.append(line)
            found = _READY.search(line)
            if found:
                self.url = found.group(1)
                self._ready.set()
        self._ready.set()

    def wait_ready(self) -> None:
        self._ready.wait(_START_PATIENCE_S)
        if not self.url:
            raise RuntimeError("apus mcp --http did not start: " + "".join(self.said)[-2000:])

    def cpu_seconds(self) -> float:
        """User + system CPU of the server process so far (Linux; 0 elsewhere)."""
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / _TICKS


@contextmanager
def _server(env: dict[str, str], vault: Path) -> Iterator[_Server]:
    server = _Server(env, vault)
    try:
        server.wait_ready()
        yield server
    finally:
        server.process.terminate()
        try:
            server.process.wait(timeout=180)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


# -- one round ---------------------------------------------------------------------------


def _calls(queries: list[str], writes: int, tag: str) -> list[Call]:
    """The searches, with `writes` entries spread evenly among them; each entry carries a
    marker word of its own, to find it by afterwards."""
    rng = random.Random(tag)
    calls = [Call("memory_search", query) for query in queries]
    step = max(1, len(calls) // max(writes, 1))
    for number in range(writes):
        marker = "".join(rng.choice(_MARKER_LETTERS) for _ in range(12))
        entry = Call("memory_write", f"Bench entry {tag}-{number}: marker {marker}.")
        calls.insert(min(len(calls), number * (step + 1)), entry)
    return calls


def _shares(calls: list[Call], clients: int, writers: int) -> list[list[Call]]:
    """The calls of each client: one client makes them all; of many, `writers` make the
    writes and the rest the searches, each taking every n-th."""
    if clients == 1:
        return [calls]
    writing = min(writers, clients - 1)
    searching = clients - writing
    searches = [c for c in calls if c.tool == "memory_search"]
    entries = [c for c in calls if c.tool == "memory_write"]
    shares = [searches[n::searching] for n in range(searching)]
    shares += [entries[n::writing] for n in range(writing)] if writing else []
    if not writing:
        shares[0] = shares[0] + entries
    return shares


async def _round(server: _Server, calls: list[Call], clients: int, writers: int) -> RoundFigures:
    shares = _shares(calls, clients, writers)
    sessions = [await _connect(server.url) for _ in shares]
    try:
        cpu, server_cpu = time.process_time(), server.cpu_seconds()
        started = time.perf_counter()
        timed = await asyncio.gather(
            *(_client(session, share) for (session, _), share in zip(sessions, shares, strict=True))
        )
        wall = time.perf_counter() - started
        client_cpu, server_spent = time.process_time() - cpu, server.cpu_seconds() - server_cpu
    finally:
        for _, stack in reversed(sessions):  # task groups close in the order they nest
            await stack.aclose()
    return RoundFigures(
        clients, wall, [t for part in timed for t in part], server_spent, client_cpu
    )


async def _connect(url: str) -> tuple[Any, Any]:
    """An initialised client session (the tools listed, so a call asks for nothing more),
    and what closes it."""
    from contextlib import AsyncExitStack

    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    stack = AsyncExitStack()
    read, write = await stack.enter_async_context(streamable_http_client(url))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    await session.list_tools()
    return session, stack


async def _client(session: Any, calls: list[Call]) -> list[Timed]:
    """The calls one after another, as one agent makes them; every third search is followed
    by reading its top hit."""
    timed: list[Timed] = []
    searched = 0
    for call in calls:
        arguments = {"query": call.text} if call.tool == "memory_search" else {"text": call.text}
        answer = await _timed(session, call.tool, arguments, timed)
        if call.tool != "memory_search" or answer is None:
            continue
        searched += 1
        results = answer.get("results") or []
        if searched % 3 == 0 and results:
            await _timed(session, "memory_get", {"path": results[0]["citation"]}, timed)
    return timed


async def _timed(
    session: Any, tool: str, arguments: dict[str, Any], timed: list[Timed]
) -> dict[str, Any] | None:
    started = time.perf_counter()
    try:
        result = await session.call_tool(tool, arguments)
    except Exception as exc:  # a failed call is a figure, not the end of the run
        timed.append(Timed(tool, time.perf_counter() - started, f"{type(exc).__name__}: {exc}"))
        return None
    seconds = time.perf_counter() - started
    if result.is_error:
        text = " ".join(getattr(block, "text", "") for block in result.content)
        timed.append(Timed(tool, seconds, text[:200] or "error"))
        return None
    structured: dict[str, Any] | None = result.structured_content
    if tool == "memory_write" and structured is not None and not structured.get("indexed"):
        timed.append(Timed(tool, seconds, "written but not indexed when answered"))
        return structured
    timed.append(Timed(tool, seconds))
    return structured


async def _check_written(url: str, vault: Path, calls: list[Call], into: ModeFigures) -> None:
    """Every entry of the round is in a daily note exactly once, and a search for its marker
    finds it there."""
    notes = "".join(p.read_text(encoding="utf-8") for p in sorted(vault.glob("memory/*.md")))
    entries = [call.text for call in calls if call.tool == "memory_write"]
    session, stack = await _connect(url)
    try:
        for text in entries:
            count = notes.count(text)
            if count == 0:
                into.missing.append(text)
            elif count > 1:
                into.doubled.append(text)
            marker = text.rsplit(" ", 1)[1].rstrip(".")
            found = await session.call_tool("memory_search", {"query": marker})
            paths = [hit["path"] for hit in (found.structured_content or {}).get("results", [])]
            if not any(_DAILY.fullmatch(path) for path in paths):
                into.not_found.append(text)
    finally:
        await stack.aclose()


# -- the figures --------------------------------------------------------------------------


def _ms(seconds: Sequence[float], q: float) -> float:
    return percentile(list(seconds), q) * 1000


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if not ordered:
        return 0.0
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def summary_lines(result: ServeBenchResult) -> list[str]:
    """Per mode: the one-client and many-client rows, per tool, the ratios and the check."""
    lines = [
        f"{result.searches} searches (each third followed by memory_get) and {result.writes} "
        f"writes a round; 1 client, then {result.clients} ({result.writers} of them writing), "
        "alternating on one server",
    ]
    for mode in result.modes:
        lines.append(
            f"{mode.mode}: {mode.files} notes, {mode.chunks} passages "
            f"(indexed in {mode.index_s:.1f} s)"
        )
        rows: dict[int, tuple[float, float]] = {}
        for clients in sorted({1, result.clients}):
            rounds = mode.of(clients)
            if not rounds:
                continue
            throughput = _median([r.throughput for r in rounds])
            timed = [t for r in rounds for t in r.timed]
            errors = sum(len(r.errors) for r in rounds)
            calls = sum(r.calls for r in rounds)
            server_cpu = sum(r.server_cpu_s for r in rounds) / calls * 1000 if calls else 0.0
            client_cpu = sum(r.client_cpu_s for r in rounds) / calls * 1000 if calls else 0.0
            lines.append(
                f"  {clients} client(s): {throughput:.1f} calls/s (median of {len(rounds)}), "
                f"{errors} errors; CPU a call: server {server_cpu:.1f} ms, "
                f"clients {client_cpu:.1f} ms"
            )
            for tool in ("memory_search", "memory_get", "memory_write"):
                seconds = [t.seconds for t in timed if t.tool == tool and not t.error]
                if seconds:
                    lines.append(
                        f"    {tool:<14} {len(seconds):>5}  p50 {_ms(seconds, 50):7.1f} ms  "
                        f"p95 {_ms(seconds, 95):7.1f} ms  p99 {_ms(seconds, 99):7.1f} ms"
                    )
            search = [t.seconds for t in timed if t.tool == "memory_search" and not t.error]
            rows[clients] = (throughput, _ms(search, 50) if clients == 1 else _ms(search, 99))
            for error in sorted({t.error for t in timed if t.error})[:5]:
                lines.append(f"    error: {error}")
        if 1 in rows and result.clients in rows and result.clients != 1:
            one, many = rows[1], rows[result.clients]
            lines.append(
                f"  {result.clients} clients / 1: throughput {many[0] / max(one[0], 1e-9):.2f}x; "
                f"search p99 at {result.clients} / p50 at 1: {many[1] / max(one[1], 1e-9):.2f}x"
            )
        lines.append(
            f"  written {mode.written}: missing {len(mode.missing)}, doubled "
            f"{len(mode.doubled)}, not found by search {len(mode.not_found)}"
        )
    return lines
