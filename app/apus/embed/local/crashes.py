"""How the managed server ended, in words, and the count of crashes in a row that stops restarts.

A native crash (SIGILL from CPU instructions the machine lacks, SIGSEGV, SIGABRT from a
GGML_ASSERT, SIGKILL from the OOM killer) would repeat on every restart. The count lives in a
small file next to the server's runtime state, so every Apus process sees it; it is ignored
once the llama-cpp-python build changes (a reinstall), and the server's settings and model
already choose which file is read.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import re
import signal
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from apus.embed.local import procs

# Crashes in a row after which the server is not started again until something changes.
MAX_CRASHES_IN_A_ROW = 3
# The one command that rebuilds llama.cpp for the CPU it runs on (the README says the same).
PORTABLE_REINSTALL_FIX = (
    ".venv/bin/python packaging/llama_build.py --python .venv/bin/python  (in the Apus "
    "checkout: rebuilds llama-cpp-python for this CPU)"
)
_MEMORY_FIX = "lower memory.search.local.contextSize or batchTokens, or close other programs"
_REPORT_FIX = "apus doctor  (and see the server log)"
_LOG_LINES = 3

# What each deadly signal means for a llama.cpp server, and what to do about it.
_SIGNALS: dict[int, tuple[str, str, str]] = {
    signal.SIGILL: (
        "illegal instruction",
        "this llama.cpp build uses CPU instructions this machine cannot run",
        PORTABLE_REINSTALL_FIX,
    ),
    signal.SIGSEGV: ("segmentation fault", "llama.cpp crashed", _REPORT_FIX),
    signal.SIGABRT: ("aborted", "llama.cpp stopped on a failed check", _REPORT_FIX),
    signal.SIGBUS: ("bus error", "the model file could not be read", "apus models pull"),
    signal.SIGFPE: ("arithmetic error", "llama.cpp crashed", _REPORT_FIX),
    signal.SIGKILL: (
        "killed",
        "something killed it, most often the system for lack of memory",
        _MEMORY_FIX,
    ),
}
# faulthandler's words in the server log, for processes that did not start the server and
# so cannot read its exit status.
_FAULT_WORDS = {
    "Illegal instruction": signal.SIGILL,
    "Segmentation fault": signal.SIGSEGV,
    "Aborted": signal.SIGABRT,
    "Bus error": signal.SIGBUS,
    "Floating-point exception": signal.SIGFPE,
}
_FATAL = re.compile(r"Fatal Python error: (.+)")
_HUNG_FIX = (
    "nothing, if it was paused on purpose (SIGSTOP, a debugger); if it repeats, apus doctor "
    "(and see the server log)"
)
_MEANINGFUL = re.compile(
    r"GGML_ASSERT|\berror\b|\bfailed\b|\babort(ed)?\b|out of memory|bad_alloc|terminate called",
    re.IGNORECASE,
)
# Stack frames, thread dumps and tensor/graph listings say where, not what.
_NOISE = re.compile(
    r"^\s*(File \"|#\d+|Thread 0x|Current thread|Extension modules|Stack \(most|Fatal Python|"
    r"\[New |\[Thread |0x[0-9a-f]+|.*\(\+0x[0-9a-f]+\)|ggml_graph|- ?\d+: |node_\d+|leaf_\d+)"
)


@dataclass(frozen=True)
class ServerEnd:
    """How a server process ended: an exit code, a signal number, or neither (unknown)."""

    code: int | None = None
    signal: int | None = None
    log_lines: tuple[str, ...] = ()
    log_file: str = ""
    # Set when an Apus process ended it because it stopped answering for this many seconds.
    hung_s: int | None = None

    @classmethod
    def from_returncode(
        cls, returncode: int, log_text: str, log_file: str = "", *, hung: int | None = None
    ) -> ServerEnd:
        """`hung`: an Apus process killed it after it stopped answering for that long (then
        the SIGKILL it took says nothing about why it ended)."""
        lines = meaningful_lines(log_text)
        if returncode < 0:
            return cls(signal=-returncode, log_lines=lines, log_file=log_file, hung_s=hung)
        return cls(code=returncode, log_lines=lines, log_file=log_file, hung_s=hung)

    @classmethod
    def from_log(cls, log_text: str, log_file: str = "", *, hung: int | None = None) -> ServerEnd:
        """For a server another process started: faulthandler's last words name the signal."""
        found = None
        for match in _FATAL.finditer(log_text):
            found = _FAULT_WORDS.get(match.group(1).strip(), found)
        return cls(
            signal=found,
            log_lines=meaningful_lines(log_text),
            log_file=log_file,
            hung_s=hung,
        )

    @property
    def how(self) -> str:
        """ "SIGILL (illegal instruction)", "exit code 1", "stopped answering for 12 s;
        replaced", or "an unknown cause"."""
        if self.hung_s is not None:
            return f"stopped answering for {self.hung_s} s; replaced"
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            words = _SIGNALS.get(self.signal)
            return f"{name} ({words[0]})" if words else name
        if self.code is not None:
            return f"exit code {self.code}"
        return "an unknown cause"

    @property
    def meaning(self) -> str:
        if self.hung_s is not None:
            return "an Apus process ended it and started a new one"
        words = _SIGNALS.get(self.signal or 0)
        return words[1] if words else ""

    @property
    def fix(self) -> str:
        if self.hung_s is not None:
            return _HUNG_FIX
        words = _SIGNALS.get(self.signal or 0)
        return words[2] if words else _REPORT_FIX

    def describe(self) -> str:
        """One line: how it ended, what that means, llama.cpp's own words, and the log."""
        text = self.how
        if self.meaning:
            text += f" — {self.meaning}"
        if self.log_lines:
            text += f"; llama.cpp said: {' | '.join(self.log_lines)}"
        if self.log_file:
            text += f" (log: {self.log_file})"
        return text


@dataclass(frozen=True)
class CrashRecord:
    """Crashes in a row of one server configuration, the last one, and the engine they hit."""

    count: int
    last: ServerEnd
    engine: str
    at: float

    @property
    def gave_up(self) -> bool:
        return self.count >= MAX_CRASHES_IN_A_ROW


class CrashLedger:
    """The persisted crash count of one server key (a 0600 JSON file, written atomically)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> CrashRecord | None:
        """The record, unless llama-cpp-python was reinstalled since (then it no longer counts)."""
        data = procs.read_json(self.path)
        if data is None:
            return None
        try:
            last = data["last"]
            record = CrashRecord(
                count=int(data["count"]),
                last=ServerEnd(
                    last.get("code"),
                    last.get("signal"),
                    tuple(last["log_lines"]),
                    str(last.get("log_file", "")),
                    last.get("hung_s"),
                ),
                engine=str(data["engine"]),
                at=float(data["at"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        return record if record.engine == engine_fingerprint() else None

    def record(self, end: ServerEnd) -> CrashRecord:
        previous = self.load()
        record = CrashRecord(
            count=(previous.count if previous else 0) + 1,
            last=end,
            engine=engine_fingerprint(),
            at=time.time(),
        )
        payload = asdict(record)
        payload["last"]["log_lines"] = list(end.log_lines)
        procs.write_private_json(self.path, payload)
        return record

    def clear(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def meaningful_lines(log_text: str, limit: int = _LOG_LINES) -> tuple[str, ...]:
    """llama.cpp's last words that say what went wrong (an assert, an error, out of memory);
    none when it said nothing of the kind (then the load chatter and the stack frames and
    graph dumps would only hide the signal's name)."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    errors = [line for line in lines if not _NOISE.match(line) and _MEANINGFUL.search(line)]
    return tuple(line[:300] for line in errors[-limit:])


@lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """llama-cpp-python's version and its native libraries' sizes and times: a rebuild with
    other CPU flags changes it even when the version stays the same."""
    try:
        version = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        version = "none"
    parts = [version]
    spec = importlib.util.find_spec("llama_cpp")
    if spec is not None and spec.origin:
        lib = Path(spec.origin).parent / "lib"
        with contextlib.suppress(OSError):
            for entry in sorted(lib.iterdir()):
                info = entry.stat()
                parts.append(f"{entry.name}:{info.st_size}:{info.st_mtime_ns}")
    return "|".join(parts)
