"""Crashes of the managed server: named from its exit status or its log, counted in a row across
processes, and no restart after three until something changes or a person asks again."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from apus.embed.base import EmbeddingUnavailable
from apus.embed.local.crashes import (
    MAX_CRASHES_IN_A_ROW,
    CrashLedger,
    ServerEnd,
    meaningful_lines,
)
from apus.embed.local.procs import pid_alive
from apus.embed.local.server_manager import ManagedServer, ServerSpec

SpecFactory = Callable[..., ServerSpec]

# A GGML_ASSERT as llama.cpp prints it, with the backtrace and faulthandler's dump after it.
ASSERT_LOG = """\
llama_model_loader: - kv   0:                       general.architecture str = bert
load_tensors: loading model tensors, this can take a while... (mmap = true)
/src/ggml/src/ggml-cpu/ops.cpp:123: GGML_ASSERT(ne00 % 32 == 0) failed
#0  0x00007f1c2e0a1b2c in ggml_abort () from libggml-base.so
#1  0x00007f1c2e0a2d3e in ggml_compute_forward_mul_mat () from libggml-cpu.so
/usr/lib/libggml-base.so(+0x1a2b3)[0x7f1c2e0a1b2c]
Fatal Python error: Aborted

Thread 0x00007f1c2f3a4740 (most recent call first):
  File "/venv/lib/python3.11/site-packages/llama_cpp/llama.py", line 1021 in embed
Extension modules: numpy.core._multiarray_umath, ...
"""


def wait_for_exit(pid: int, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while pid_alive(pid):
        assert time.monotonic() < deadline, f"pid {pid} did not exit"
        time.sleep(0.05)


def kill(pid: int, signum: int) -> None:
    os.kill(pid, signum)
    wait_for_exit(pid)


def test_llama_cpp_s_own_words_are_kept_and_the_dumps_dropped() -> None:
    assert meaningful_lines(ASSERT_LOG) == (
        "/src/ggml/src/ggml-cpu/ops.cpp:123: GGML_ASSERT(ne00 % 32 == 0) failed",
    )
    end = ServerEnd.from_log(ASSERT_LOG)  # a server this process did not start
    assert end.how == "SIGABRT (aborted)"
    assert "GGML_ASSERT(ne00 % 32 == 0) failed" in end.describe()
    assert ServerEnd.from_returncode(-signal.SIGILL, "").how == "SIGILL (illegal instruction)"
    # Load chatter alone is not llama.cpp's word on the crash: the log's path is.
    chatter = "load_tensors: CPU model buffer size = 1.2 MiB\nUsing fallback chat format\n"
    assert meaningful_lines(chatter) == ()
    quiet = ServerEnd.from_returncode(-signal.SIGSEGV, chatter, "/logs/server.log")
    assert (
        quiet.describe()
        == "SIGSEGV (segmentation fault) — llama.cpp crashed (log: /logs/server.log)"
    )
    assert ServerEnd.from_returncode(1, "").how == "exit code 1"


def test_three_crashes_in_a_row_stop_restarts_in_every_process(
    tiny_model: Path, managed: list[ManagedServer], fast_spec: SpecFactory
) -> None:
    server = ManagedServer(fast_spec(tiny_model))
    other = ManagedServer(fast_spec(tiny_model))  # another Apus process's handle
    managed += [server, other]
    pids = [server.ensure_running().pid]
    for count in range(1, MAX_CRASHES_IN_A_ROW):
        kill(pids[-1], signal.SIGILL)
        pids.append(server.ensure_running().pid)  # restarted, after a backoff
        record = server.crashes.load()
        assert record is not None and record.count == count
        assert record.last.how == "SIGILL (illegal instruction)"
    kill(pids[-1], signal.SIGILL)
    with pytest.raises(EmbeddingUnavailable) as caught:
        server.ensure_running()
    reason = caught.value.reason
    assert f"crashed {MAX_CRASHES_IN_A_ROW} times in a row, last with SIGILL" in reason
    assert "CPU instructions this machine cannot run" in reason
    assert "packaging/llama_build.py" in (caught.value.fix or "")
    assert server.describe()["crashes"]["restarts_stopped"] is True
    with pytest.raises(EmbeddingUnavailable):
        other.ensure_running()  # the count is shared: no process starts it again
    assert not server.state_file.exists()
    assert not list(server.state_file.parent.glob("*.clients"))  # no crashed server's leftovers

    other.forget_crashes()  # what `apus memory index` run by hand does
    assert pid_alive(server.ensure_running().pid)
    assert server.crashes.load() is None


def test_a_crash_of_a_server_another_process_started_is_named_from_its_log(
    tiny_model: Path, managed: list[ManagedServer], fast_spec: SpecFactory
) -> None:
    starter = ManagedServer(fast_spec(tiny_model))
    attached = ManagedServer(fast_spec(tiny_model))
    managed += [starter, attached]
    state = starter.ensure_running()
    assert attached.ensure_running().pid == state.pid
    starter.close()  # the starter leaves; the attached process only has the pid and the log
    kill(state.pid, signal.SIGSEGV)
    attached.request_failed()
    record = attached.crashes.load()
    assert record is not None and record.last.how == "SIGSEGV (segmentation fault)"


def test_a_rebuilt_llama_cpp_forgets_the_crashes(tmp_path: Path) -> None:
    ledger = CrashLedger(tmp_path / "crashes.json")
    for _ in range(MAX_CRASHES_IN_A_ROW):
        record = ledger.record(ServerEnd(signal=signal.SIGILL))
    assert record.gave_up and ledger.load() == record
    data = json.loads(ledger.path.read_text(encoding="utf-8"))
    data["engine"] = "0.3.36|libggml-cpu.so:123:456"  # the build the crashes happened with
    ledger.path.write_text(json.dumps(data), encoding="utf-8")
    assert ledger.load() is None
    assert oct(ledger.path.stat().st_mode & 0o777) == "0o600"


def test_a_hung_server_that_is_replaced_is_named_as_hung_not_as_killed(
    tiny_model: Path, managed: list[ManagedServer], fast_spec: SpecFactory
) -> None:
    starter = ManagedServer(fast_spec(tiny_model))
    other = ManagedServer(fast_spec(tiny_model))  # another Apus process's handle
    managed += [starter, other]
    hung = starter.ensure_running()
    os.kill(hung.pid, signal.SIGSTOP)  # alive, holding its port, answering nothing
    try:
        replacement = other.ensure_running()
    finally:
        if pid_alive(hung.pid):
            os.kill(hung.pid, signal.SIGCONT)
    assert replacement.pid != hung.pid and pid_alive(replacement.pid)
    assert not pid_alive(hung.pid)  # ended by the replacement (SIGKILL: it ignored SIGTERM)
    starter.request_failed()  # the parent reaps it: its exit status says SIGKILL
    record = starter.crashes.load()
    assert record is not None
    described = record.last.describe()
    assert re.search(r"stopped answering for \d+ s; replaced", described), described
    assert "lack of memory" not in described and "SIGKILL" not in described
    assert "paused on purpose" in record.last.fix
