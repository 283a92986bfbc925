"""`memory_write` under attack and under load, as agents send it: a `memory/` swapped for a link
to a folder outside the vault while writes run, notes hard-linked elsewhere, three writers and
an editor on one note with one writer killed with SIGKILL mid-storm, and a second server
writing once while the first writes a burst. Counted, never timed: nothing written lands
outside the vault, no acknowledged entry is lost or doubled, no entry is torn, and writers take
turns."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agents.mcp_client import agent, call, server_env
from agents.test_mcp_transport import INITIALIZE, INITIALIZED
from support.vaults import index_vault, vault_digest, write_note

TODAY = "2026-12-02"
DAILY = f"memory/{TODAY}.md"
# Writes that must each meet the race, and swaps that must happen meanwhile.
RACE_WRITES = 40
RACE_SWAPS = 40
# A's writes acknowledged while B's one write runs: one in hand, and a margin for B's server
# waiting for a CPU on a loaded machine (without turns: 890).
MAX_TURNS_AHEAD = 10
# The killed writer's entries before its kill, and the others' after it.
STORM_BEFORE_KILL = 10
STORM_AFTER_KILL = 10


def writable_env(**extra: str) -> dict[str, str]:
    return server_env(APUS_TODAY=TODAY, APUS_MEMORY__WRITE__ENABLED="true", **extra)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "MEMORY.md", "# Memory\n\nThe blog is deployed with make deploy.\n")
    write_note(root, DAILY, f"# {TODAY}\n\nStarted the day by hand.\n")
    index_vault(root, server_env())
    return root


def _vault_text(vault: Path) -> str:
    """Every note under the vault, wherever a folder was moved to inside it."""
    return "".join(path.read_text(encoding="utf-8") for path in sorted(vault.rglob("*.md")))


class _Swapper:
    """Swaps `memory/` for a link to `outside` and back, in a loop, as an attacker would.

    A writer may make a new `memory/` in the moment the folder is away; that one is moved
    aside inside the vault (its notes stay in the vault, and are looked for there)."""

    def __init__(self, vault: Path, outside: Path) -> None:
        self.memory = vault / "memory"
        self.real = vault / "memory.real"
        self.vault = vault
        self.outside = outside
        self.swaps = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="swapper")

    def _run(self) -> None:
        while not self.stop.is_set():
            self._swap_once()
            self.swaps += 1

    def _aside(self) -> None:
        os.rename(self.memory, self.vault / f"memory.made-{self.swaps}-{os.urandom(3).hex()}")

    def _swap_once(self) -> None:
        os.rename(self.memory, self.real)
        try:
            os.symlink(self.outside, self.memory, target_is_directory=True)
        except FileExistsError:  # made by a writer meanwhile
            self._aside()
            os.symlink(self.outside, self.memory, target_is_directory=True)
        os.unlink(self.memory)
        while True:
            try:
                os.rename(self.real, self.memory)
                return
            except OSError:  # a writer made memory/ again and wrote into it: keep both
                self._aside()


async def test_a_folder_swapped_for_a_link_never_sends_an_entry_outside(
    vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    swapper = _Swapper(vault, outside)
    written: list[str] = []
    refusals: list[str] = []
    async with agent(vault, writable_env()) as session:
        swapper.thread.start()
        try:
            number = 0
            while number < RACE_WRITES or swapper.swaps < RACE_SWAPS:
                text = f"race entry {number} kept"
                result = await session.call_tool("memory_write", {"text": text})
                body = "".join(getattr(block, "text", "") for block in result.content)
                (refusals if result.is_error else written).append(body if result.is_error else text)
                number += 1
        finally:
            swapper.stop.set()
            swapper.thread.join()
    print(
        f"race: {number} writes, {len(written)} written, {len(refusals)} refused, "
        f"{swapper.swaps} swaps"
    )
    assert list(outside.iterdir()) == []  # nothing outside the vault, ever
    notes = _vault_text(vault)
    for text in written:
        assert notes.count(text + "\n") == 1, text  # every acknowledged entry, once
    for refusal in refusals:
        assert "Fix:" in refusal and "saved the note over it" not in refusal, refusal
    refused_texts = {f"race entry {n} kept" for n in range(number)} - set(written)
    assert not [text for text in refused_texts if text + "\n" in notes]  # refused: not written
    assert written, "no write got through: the race was never run"


async def test_a_note_with_a_second_name_outside_or_not_a_file_is_refused(
    vault: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    (vault / "MEMORY.md").unlink()
    outside.write_text("# Someone else's\n", encoding="utf-8")
    os.link(outside, vault / "MEMORY.md")  # the same file under two names
    os.mkfifo(vault / "USER.md")  # would block an open for writing forever
    before = vault_digest(vault)
    async with agent(vault, writable_env()) as session:
        for target, says in (("MEMORY.md", "2 hard links"), ("USER.md", "not a regular file")):
            result = await session.call_tool("memory_write", {"text": "x", "target": target})
            text = result.content[0].text  # type: ignore[union-attr]
            assert result.is_error and says in text and "Fix:" in text, text
    assert outside.read_text(encoding="utf-8") == "# Someone else's\n"
    assert vault_digest(vault) == before


class _RawAgent:
    """`apus mcp` driven by raw JSON-RPC lines (so the test knows its pid, to kill it)."""

    def __init__(self, vault: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "apus", "--vault", str(vault), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._next = 1
        self.send(INITIALIZE | {"id": self._take_id()})
        self.reply()
        self.send(INITIALIZED)

    def _take_id(self) -> int:
        self._next += 1
        return self._next

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any] | None:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        return json.loads(line) if line else None

    def write(self, text: str) -> dict[str, Any] | None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": self._take_id(),
                "method": "tools/call",
                "params": {"name": "memory_write", "arguments": {"text": text}},
            }
        )
        return self.reply()


def test_three_writers_and_an_editor_with_one_writer_killed_mid_storm(vault: Path) -> None:
    editor_lines: list[str] = []
    done = threading.Event()
    progress = threading.Condition()

    def editor() -> None:
        # Two lines each time a writer's entry is acknowledged: the editor keeps pace.
        seen = [0]
        while not done.is_set() or len(editor_lines) < 5:
            with progress:
                progress.wait_for(lambda: done.is_set() or _acks() > seen[0])
                seen[0] = _acks()
            for _ in range(2):
                _edit()

    def _acks() -> int:
        return sum(map(len, acknowledged.values()))

    def _edit() -> None:
        # As `echo >> note` does: a whole line appended.
        line = f"editor line {len(editor_lines)}"
        fd = os.open(vault / DAILY, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
        editor_lines.append(line)

    acknowledged: dict[str, list[str]] = {"a": [], "b": [], "k": []}
    sent_by_killed: list[str] = []
    env = writable_env()
    kill_done = threading.Event()

    started = threading.Barrier(3)  # the three writers start writing together

    def writer(name: str) -> None:
        # Writes until the kill has happened, and STORM_AFTER_KILL more after it.
        raw = _RawAgent(vault, env)
        started.wait()
        try:
            n = after_kill = 0
            while after_kill < STORM_AFTER_KILL:
                text = f"storm entry {name}-{n} ok"
                answer = raw.write(text)
                assert answer is not None and not answer["result"].get("isError"), answer
                with progress:
                    acknowledged[name].append(text)
                    progress.notify_all()
                n += 1
                after_kill += kill_done.is_set()
        finally:
            raw.process.stdin.close()  # type: ignore[union-attr]
            raw.process.wait()

    killed = _RawAgent(vault, env)
    threads = [threading.Thread(target=writer, args=(name,)) for name in ("a", "b")]
    threads.append(threading.Thread(target=editor))
    for thread in threads:
        thread.start()
    started.wait()
    try:
        for n in range(STORM_BEFORE_KILL + 1):
            text = f"storm entry k-{n} ok"
            sent_by_killed.append(text)
            if n == STORM_BEFORE_KILL:
                # Writers take turns: the others wrote about as many meanwhile (a server
                # starting up while others write is not left waiting behind them).
                at_kill = [len(acknowledged[name]) for name in ("a", "b")]
                assert min(at_kill) >= STORM_BEFORE_KILL // 2, at_kill
                # SIGKILL with a write in flight: sent, its answer not read.
                killed.send(
                    {
                        "jsonrpc": "2.0",
                        "id": 999,
                        "method": "tools/call",
                        "params": {"name": "memory_write", "arguments": {"text": text}},
                    }
                )
                killed.process.send_signal(signal.SIGKILL)
                killed.process.wait()
                kill_done.set()
                break
            answer = killed.write(text)
            assert answer is not None and not answer["result"].get("isError"), answer
            with progress:
                acknowledged["k"].append(text)
                progress.notify_all()
    finally:
        kill_done.set()
        for thread in threads[:2]:
            thread.join()
        with progress:
            done.set()
            progress.notify_all()
        threads[2].join()

    lines = (vault / DAILY).read_text(encoding="utf-8").splitlines()
    counts = Counter(lines)
    assert lines[:3] == [f"# {TODAY}", "", "Started the day by hand."]
    assert all(counts[line] == 1 for line in editor_lines)  # every editor line whole, once
    for texts in acknowledged.values():
        for text in texts:
            assert counts[text] == 1, text
            assert lines[lines.index(text) - 1].startswith("## "), text  # under its heading
    in_flight = sent_by_killed[-1]
    assert counts[in_flight] in (0, 1)  # the write the kill cut: whole, or not at all
    for line in lines[3:]:  # nothing torn: every line is one of the whole lines written
        assert line == "" or line.startswith(("## ", "editor line ", "storm entry ")), line
        if line.startswith("storm entry "):
            assert line.endswith(" ok"), line
    print(
        f"storm: {dict((name, len(texts)) for name, texts in acknowledged.items())} "
        f"acknowledged, "
        f"{len(editor_lines)} editor lines, in-flight entry kept: {counts[in_flight]}"
    )


async def test_a_second_server_writes_in_its_turn_not_after_the_first_one_s_burst(
    vault: Path,
) -> None:
    """Server A writes in a loop; B writes once meanwhile. Once B's entry stands in line (at
    the note's lock, then at the index's), A has at most the turn in hand before it; counted
    from the client, B's server also needs the CPU to get in line, so A acknowledges a few of
    its own while B's call runs (usually one; it was hundreds behind a writer lock that
    B's sync retried every five seconds)."""
    acks = 0
    b_done = asyncio.Event()
    a_started = asyncio.Event()

    async def burst() -> None:
        nonlocal acks
        async with agent(vault, writable_env()) as session:
            while not b_done.is_set():
                await call(session, "memory_write", text=f"burst entry {acks} from A")
                acks += 1
                if acks == 3:
                    a_started.set()

    async def single() -> tuple[int, int, dict[str, Any]]:
        async with agent(vault, writable_env()) as session:
            await a_started.wait()
            before = acks
            answer = await call(session, "memory_write", text="the one entry from B")
            after = acks
            b_done.set()
            return before, after, answer

    _, (before, after, answer) = await asyncio.gather(burst(), single())
    print(f"A acknowledged {after - before} writes while B's one write ran")
    assert answer["indexed"] is True
    assert after - before <= MAX_TURNS_AHEAD
