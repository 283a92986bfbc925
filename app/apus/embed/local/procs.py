"""Small process helpers for the managed server: liveness, free ports, private JSON files."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
from pathlib import Path
from typing import Any


def pid_alive(pid: int) -> bool:
    """True if `pid` runs and is not a zombie (an exited child nobody has reaped yet)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    stat = Path(f"/proc/{pid}/stat")
    try:
        # The state letter follows the parenthesised command name, which may contain spaces.
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return True  # no procfs (macOS): os.kill is the best answer there is
    return fields[0] not in ("Z", "X")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the child binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_private_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON readable only by the user (it may hold an API key), atomically."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def terminate(pid: int, *, grace_s: float = 5.0) -> None:
    """SIGTERM, wait up to `grace_s`, then SIGKILL; quiet if the process is already gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.05)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))  # Windows has no SIGKILL


def tail(path: Path, *, lines: int = 20, max_bytes: int = 16384) -> str:
    """The last lines of a log file (for error messages)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])
