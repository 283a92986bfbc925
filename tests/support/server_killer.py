"""Send a real signal to every managed embedding server that comes up, as a crashing llama.cpp
build would die: the server is killed as soon as its state file says it is ready, so the
indexing that started it is in the middle of its embedding requests."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from types import TracebackType

from apus.embed.local.procs import pid_alive

_POLL_S = 0.005


class ServerKiller:
    """While entered, kill each new server named by a state file in `runtime` with `signum`."""

    def __init__(self, runtime: Path, signum: int, *, limit: int | None = None) -> None:
        """`limit`: kill only that many servers (then leave the next ones alone)."""
        self.runtime = runtime
        self.signum = signum
        self.limit = limit
        self.killed: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="server-killer", daemon=True)

    def __enter__(self) -> ServerKiller:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in self._ready_servers():
                if self.limit is not None and len(self.killed) >= self.limit:
                    break
                if pid not in self.killed and pid_alive(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, self.signum)
                        self.killed.append(pid)
            time.sleep(_POLL_S)

    def _ready_servers(self) -> list[int]:
        pids = []
        for state_file in self.runtime.glob("embed-server-*.json"):
            if state_file.name.endswith((".info.json", ".crashes.json")):
                continue
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                pids.append(int(json.loads(state_file.read_text(encoding="utf-8"))["pid"]))
        return pids


def server_pids(runtime: Path) -> list[int]:
    """Live managed-server processes started under `runtime` (from their command lines)."""
    found = []
    marker = str(runtime).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmdline = (entry / "cmdline").read_bytes()
            if b"server_process" in cmdline and marker in cmdline and pid_alive(int(entry.name)):
                found.append(int(entry.name))
    return found
