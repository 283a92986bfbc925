"""`apus bench hook`: Claude Code's recall hook as a whole process, beside a one-shot search.

A scratch vault holds MEMORY.md and USER.md with generated trigger entries and takes the
corpus in through `extraPaths` (the corpus itself is never written to); it is indexed by
keyword. Then `apus hook claude-code` (a UserPromptSubmit event on stdin, as Claude Code
sends it) and `apus memory search --mode keyword --json` (the same prompt) run in turn, the
order swapped run by run, each as a new process: wall time from start to exit, and CPU time
(user + system) of the child as the kernel counted it.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from apus.benchmarks.measure import percentile
from apus.clients.launch import own_executable

# What `apus bench hook` is judged against: the turn waits for the hook.
TARGET_P95_MS = 150.0


@dataclass(frozen=True)
class ProcessTiming:
    name: str
    runs: int
    wall_p50_ms: float
    wall_p95_ms: float
    cpu_p50_ms: float
    cpu_p95_ms: float


@dataclass(frozen=True)
class HookBenchResult:
    notes: int
    entries: int
    index_seconds: float
    hook: ProcessTiming
    search: ProcessTiming
    answered: int  # hook runs that added context
    matching: int  # prompts written to match a trigger
    load: tuple[float, float]  # the 1-minute load average before and after the runs
    cores: int


def write_vault(folder: Path, corpus: Path, entries: int, seed: int = 11) -> list[str]:
    """MEMORY.md (three quarters of the entries) and USER.md with triggers named after the
    corpus's pages; returns the trigger phrases."""
    stems = sorted({path.stem for path in corpus.rglob("*.md")})
    rng = random.Random(seed)
    chosen = rng.sample(stems, min(entries, len(stems)))
    triggers = [f"{stem} setup" for stem in chosen]
    memory = ["# Memory", ""]
    user = ["# User", ""]
    for number, trigger in enumerate(triggers):
        target = user if number % 4 == 3 else memory
        target += [
            f"## Entry {number}",
            f"<!-- importance: {1 + number % 10} -->",
            f"<!-- triggers: {trigger}; {trigger.split()[0]} notes -->",
            f"Decided on day {number}: {trigger} goes through the staging host first, "
            f"then production; keep the old config for a week.",
            "",
        ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "MEMORY.md").write_text("\n".join(memory), encoding="utf-8")
    (folder / "USER.md").write_text("\n".join(user), encoding="utf-8")
    return triggers


def prompts(triggers: Sequence[str], count: int, seed: int = 5) -> list[tuple[str, bool]]:
    """Half the prompts name a trigger, half none (a turn that recalls nothing)."""
    rng = random.Random(seed)
    out = []
    for number in range(count):
        if number % 2 == 0:
            out.append((f"how do we handle {rng.choice(triggers)} on the new laptop?", True))
        else:
            out.append((f"what was the plan for the quarterly report, item {number}?", False))
    return out


def run_hook_bench(corpus: Path, scratch: Path, *, entries: int, runs: int) -> HookBenchResult:
    vault = scratch / "vault"
    triggers = write_vault(vault, corpus, entries)
    config = scratch / "config.toml"
    config.write_text(
        f"vault = {json.dumps(str(vault))}\n"
        "[memory.search]\n"
        'provider = "none"\n'
        f"extraPaths = [{json.dumps(str(corpus.resolve()))}]\n"
        "[memory.search.store]\n"
        f"path = {json.dumps(str(scratch / 'index'))}\n",
        encoding="utf-8",
    )
    apus = [*own_executable(), "--config", str(config)]
    started = time.perf_counter()
    indexed = subprocess.run(
        [*apus, "memory", "index", "--json"], capture_output=True, text=True, check=False
    )
    index_seconds = time.perf_counter() - started
    if indexed.returncode != 0:
        raise RuntimeError(f"indexing failed: {indexed.stderr.strip()[-2000:]}")
    notes = int(json.loads(indexed.stdout).get("files", 0))
    hook_walls: list[float] = []
    hook_cpus: list[float] = []
    search_walls: list[float] = []
    search_cpus: list[float] = []
    answered = 0
    asked = prompts(triggers, runs)
    load_before = os.getloadavg()[0]
    for number, (prompt, _matches) in enumerate(asked):
        event = json.dumps(
            {
                "session_id": "bench",
                "transcript_path": str(scratch / "transcript.jsonl"),
                "cwd": str(scratch),
                "hook_event_name": "UserPromptSubmit",
                "prompt": prompt,
            }
        )
        hook_run = ([*apus, "hook", "claude-code"], event)
        search_run = ([*apus, "memory", "search", prompt, "--mode", "keyword", "--json"], "")
        order = [hook_run, search_run] if number % 2 == 0 else [search_run, hook_run]
        for command, stdin in order:
            wall, cpu, output = _timed(command, stdin)
            if command is hook_run[0]:
                hook_walls.append(wall)
                hook_cpus.append(cpu)
                answered += bool(output.strip())
            else:
                search_walls.append(wall)
                search_cpus.append(cpu)
    return HookBenchResult(
        notes=notes,
        entries=len(triggers),
        index_seconds=index_seconds,
        hook=_timing("hook claude-code", hook_walls, hook_cpus),
        search=_timing("memory search", search_walls, search_cpus),
        answered=answered,
        matching=sum(matches for _prompt, matches in asked),
        load=(load_before, os.getloadavg()[0]),
        cores=os.cpu_count() or 1,
    )


def _timed(command: list[str], stdin: str) -> tuple[float, float, str]:
    """Wall and CPU ms of one child process from start to exit, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    wall_ms = (time.perf_counter() - wall) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[-4:])} failed: {done.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall_ms, cpu * 1000, done.stdout


def _timing(name: str, walls: list[float], cpus: list[float]) -> ProcessTiming:
    return ProcessTiming(
        name,
        len(walls),
        percentile(walls, 50),
        percentile(walls, 95),
        percentile(cpus, 50),
        percentile(cpus, 95),
    )


def hook_table(r: HookBenchResult) -> list[str]:
    lines = [
        f"vault: {r.notes:,} notes, MEMORY.md and USER.md with {r.entries} trigger entries "
        f"(keyword index built in {r.index_seconds:.1f} s)",
        "each run is a new process; the two alternate; ms, wall | CPU (user + system)",
        f"load average {r.load[0]:.1f} -> {r.load[1]:.1f} on {r.cores} cores (wall time waits "
        "for a core when the load is above that; CPU time does not)",
    ]
    for t in (r.hook, r.search):
        lines.append(
            f"{t.name:<17} {t.runs} runs  wall p50 {t.wall_p50_ms:.0f}  p95 {t.wall_p95_ms:.0f}"
            f"  | cpu p50 {t.cpu_p50_ms:.0f}  p95 {t.cpu_p95_ms:.0f}"
        )
    lines.append(
        f"hook / search: p50 wall {r.hook.wall_p50_ms / r.search.wall_p50_ms:.2f}x  "
        f"cpu {r.hook.cpu_p50_ms / r.search.cpu_p50_ms:.2f}x"
    )
    lines.append(
        f"hook added context on {r.answered} of {r.hook.runs} prompts ({r.matching} name a trigger)"
    )
    verdict = "met" if r.hook.wall_p95_ms <= TARGET_P95_MS else "missed"
    lines.append(f"target: hook wall p95 <= {TARGET_P95_MS:.0f} ms: {verdict}")
    return lines
