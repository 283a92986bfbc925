"""The managed llama.cpp embedding server: start or share it, probe it, restart it, stop it.

One server runs per (model file, settings) and user. Its pid, port and API key live in a
0600 state file under the runtime dir, so every Apus process attaches to the same one. Each
attached process registers its pid in the server's clients folder; the server's watchdog
(server_process.py) exits when none of them is alive, so nothing is orphaned even after `kill -9`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from apus import paths
from apus.backoff import Backoff
from apus.embed.base import (
    EmbeddingConnectionError,
    EmbeddingError,
    EmbeddingRequestError,
    EmbeddingUnavailable,
    register_secret,
)
from apus.embed.local import procs
from apus.embed.local.crashes import CrashLedger, CrashRecord, ServerEnd
from apus.embed.local.gguf_info import GGUFFormatError, read_gguf_info
from apus.embed.local.offload import read_offload
from apus.embed.local.server_process import MODELS_PATH, client_pids, server_environment
from apus.relaunch import own_command

log = logging.getLogger(__name__)

_ATTACH_PROBE_TIMEOUT_S = 3.0
# What the server answers and how it is probed. Part of the key, so an Apus from before a
# change of it (left running through an upgrade) never shares a server with one after it:
# each would take the other's server for a hung one and stop it.
_SERVER_PROTOCOL = "embedding_app/1"
# A server that crashed or failed to start is started again after 1 s, 2 s, 4 s... up to 30 s.
RESTART_BACKOFF = Backoff(first=1.0, longest=30.0)
_LOG_TAIL_LINES = 15
_ERROR_WORDS = re.compile(r"error|failed|cannot|abort|assert|exception", re.IGNORECASE)


@dataclass(frozen=True)
class ServerSpec:
    """What to run: the model file and how llama.cpp should load it."""

    model_path: Path
    model_sha256: str
    context: int
    gpu_layers: int = -1
    threads: int = 0
    idle_stop_seconds: float = 900.0
    startup_timeout_seconds: float = 120.0
    watchdog_interval_seconds: float = 2.0

    @property
    def batch(self) -> int:
        # n_batch = n_ubatch >= context: a non-causal model needs each input in one ubatch.
        return self.context

    def key(self) -> str:
        """Processes with the same key share one server."""
        parts = [
            _SERVER_PROTOCOL,
            str(self.model_path.resolve()),
            self.model_sha256,
            str(self.context),
            str(self.gpu_layers),
            str(self.threads),
        ]
        return hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class ServerState:
    """The shared record of a running server (the JSON state file)."""

    pid: int
    port: int
    api_key: str
    model_path: str
    model_sha256: str
    device: str
    gpu_layers: int
    started: float
    instance: str
    clients_dir: str
    log_file: str
    system_info: str = ""  # llama.cpp's own line: the CPU features it was built for
    # What llama.cpp reported: whether the build offloads, and the layers it put on the GPU.
    gpu_offload: bool = False
    offloaded_layers: int = 0
    model_layers: int | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerState | None:
        try:
            return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})
        except TypeError:
            return None


def serve_command() -> list[str]:
    """How to launch the server process: a module of this interpreter, or the frozen binary."""
    return own_command("apus.embed.local.server_process", frozen_entry=("_serve-embeddings",))


class ManagedServer:
    """A handle on the shared server for one model; thread-safe.

    `ensure_running()` attaches to a live server or starts one (a crashed server is
    restarted after a backoff of 1s, 2s, 4s... capped at 30s); `close()` unregisters this
    handle and stops the server when no other client remains. How a crashed server ended is
    recorded with the count of crashes in a row (`crashes.py`); after three it is not started
    again until `forget_crashes()` or a change of settings, model or llama.cpp build.
    """

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self._key = spec.key()
        runtime = paths.runtime_dir()
        self.state_file = runtime / f"embed-server-{self._key}.json"
        self._lock_file = runtime / f"embed-server-{self._key}.lock"
        self.crashes = CrashLedger(runtime / f"embed-server-{self._key}.crashes.json")
        self._thread_lock = threading.RLock()
        self._state: ServerState | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._reaped: tuple[int, int] | None = None  # (pid, exit status) of our last child
        self._noted_instance = ""  # the server whose end is already counted
        self._healthy_instance = ""  # the server that answered a request last
        self._crash: CrashRecord | None = None  # the crash this handle last saw
        # Every crash this handle saw, recovered from or not: a sync that goes on after a
        # restart keeps them in its outcome (`crashes_seen`), since the ledger forgets them
        # once the new server answers.
        self._crashes_seen = 0
        self._last_seen: CrashRecord | None = None
        self._client_file: Path | None = None
        # Failed starts and crashes seen by this handle, for the restart backoff (the
        # ledger counts crashes across processes, for giving up).
        self._failures_in_a_row = 0
        self._not_before = 0.0
        self._last_error: EmbeddingUnavailable | None = None
        self._status = "stopped"

    @property
    def state(self) -> ServerState | None:
        return self._state

    @property
    def status(self) -> str:
        return self._status

    def ensure_running(self, *, verify: bool = False) -> ServerState:
        """A ready server for this spec (attached or started); EmbeddingUnavailable if not.

        The usual check is cheap (is the process alive?); `verify` also asks the server over
        HTTP, for use after a request to it failed.
        """
        with self._thread_lock:
            state = self._state
            alive = state is not None and self._process_alive(state)
            if state is not None and alive and (not verify or self._responds(state)):
                return state
            if state is not None:
                self._note_end(state)
            self._drop_registration()
            self._state = None
            return self._attach_or_start()

    def mark_healthy(self) -> None:
        """A request succeeded: forget earlier crashes, so the next one restarts at once-ish."""
        with self._thread_lock:
            instance = self._state.instance if self._state is not None else ""
            if instance != self._healthy_instance:
                # A server that answers ends a run of crashes, whichever process counted them.
                self.crashes.clear()
                self._crash = None
                self._healthy_instance = instance
            self._failures_in_a_row = 0
            self._status = "running"

    def request_failed(self) -> None:
        """A request could not reach the server; the next ensure_running() re-checks it."""
        with self._thread_lock:
            state = self._state
            if state is not None and not self._process_alive(state):
                self._note_end(state)

    def crash_error(self, error: EmbeddingError) -> EmbeddingError:
        """`error` (a failed request) told in the words of the crash behind it, if one was."""
        with self._thread_lock:
            crash = self._crash
        if crash is None or not isinstance(error, EmbeddingConnectionError):
            return error
        return EmbeddingRequestError(
            f"the embedding server crashed: {crash.last.describe()}", fix=crash.last.fix
        )

    def gave_up(self) -> EmbeddingUnavailable | None:
        """The error every start gives while crashes in a row stop restarts (any process's)."""
        record = self.crashes.load()
        if record is None or not record.gave_up:
            return None
        return _gave_up_error(record)

    def forget_crashes(self) -> None:
        """Try again: `apus memory index` run by hand clears the count of crashes in a row."""
        with self._thread_lock:
            self.crashes.clear()
            self._crash = None
            self._failures_in_a_row = 0
            self._not_before = 0.0
            if self._status in ("crashed", "gave-up"):
                self._status = "stopped"

    def describe(self) -> dict[str, Any]:
        state = self._state
        return {
            "state": self._status,
            "endpoint": state.base_url if state else None,
            "pid": state.pid if state else None,
            "device": state.device if state else None,
            "gpu_layers": state.gpu_layers if state else None,
            "gpu_offload": state.gpu_offload if state else None,
            "offloaded_layers": state.offloaded_layers if state else None,
            "model_layers": state.model_layers if state else None,
            "log": state.log_file if state else str(self._log_file()),
            "error": self._last_error.reason if self._last_error else None,
            "system_info": state.system_info if state else None,
            "crashes": self._crash_summary(),
            "crashes_seen": self._seen_summary(),
        }

    def _seen_summary(self) -> dict[str, Any] | None:
        """The crashes this handle saw: how many, and the last (how, when, its fix)."""
        crash = self._last_seen
        if crash is None:
            return None
        last = crash.last
        return {"count": self._crashes_seen, "last": last.how, "at": crash.at, "fix": last.fix}

    def _crash_summary(self) -> dict[str, Any] | None:
        record = self.crashes.load()
        if record is None:
            return None
        return {
            "in_a_row": record.count,
            "last": record.last.how,
            "log": list(record.last.log_lines),
            "restarts_stopped": record.gave_up,
        }

    def close(self) -> None:
        """Unregister; stop the server if no other live client uses it."""
        with self._thread_lock, self._shared_lock():
            state = self._state
            self._drop_registration()
            self._state = None
            self._status = "stopped"
            if state is None:
                return
            clients_dir = Path(state.clients_dir)
            if not procs.pid_alive(state.pid) or client_pids(clients_dir):
                return
            self._stop_process(state)

    def stop(self) -> None:
        """Stop the server now, whoever else uses it (they restart it on their next request)."""
        with self._thread_lock, self._shared_lock():
            state = self._state or self._read_state()
            self._drop_registration()
            self._state = None
            self._status = "stopped"
            if state is not None and procs.pid_alive(state.pid):
                self._stop_process(state)

    # -- internals -----------------------------------------------------------------------

    def _note_end(self, state: ServerState) -> None:
        """Count the end of a server that is gone, if it crashed (once per server)."""
        if self._noted_instance == state.instance:
            return
        end = self._how_it_ended(state)
        self._noted_instance = state.instance
        if end is None:
            return  # it stopped by itself (idle, or no client left) and said so
        self._crash = self._last_seen = self.crashes.record(end)
        self._crashes_seen += 1
        self._failures_in_a_row += 1
        backoff = self._backoff()
        self._not_before = max(self._not_before, time.monotonic() + backoff)
        self._status = "crashed"
        then = "not restarting it" if self._crash.gave_up else f"restarting in {backoff:.0f}s"
        log.warning(
            "embedding server pid %d crashed (%s, %d in a row); %s",
            state.pid,
            end.describe(),
            self._crash.count,
            then,
        )

    def _how_it_ended(self, state: ServerState) -> ServerEnd | None:
        """How a gone server ended; None for a clean stop. The process that started it knows
        its exit status; others know that a crashed server left its state file behind, and
        read the signal from the log (faulthandler's last words)."""
        log_text = procs.tail(Path(state.log_file), lines=400, max_bytes=65536)
        hung = self._replaced_after(state)
        if self._reaped is not None and self._reaped[0] == state.pid:
            code = self._reaped[1]
            if code == 0:
                return None
            return ServerEnd.from_returncode(code, log_text, state.log_file, hung=hung)
        shared = self._read_state()
        if shared is None or shared.instance != state.instance:
            return None
        return ServerEnd.from_log(log_text, state.log_file, hung=hung)

    def _replaced_file(self, state: ServerState) -> Path:
        return self.state_file.parent / f"embed-server-{self._key}-{state.instance}.replaced"

    def _note_replaced(self, state: ServerState) -> None:
        """Record, beside the server's state, that it is being replaced because it stopped
        answering, and for how long: its log has been silent that long (a live server writes
        to it for every request), and at least the probe's own wait."""
        try:
            silent = time.time() - Path(state.log_file).stat().st_mtime
        except OSError:
            silent = 0.0
        seconds = max(1, round(max(silent, _ATTACH_PROBE_TIMEOUT_S)))
        with contextlib.suppress(OSError):
            self._replaced_file(state).write_text(str(seconds), encoding="utf-8")

    def _replaced_after(self, state: ServerState) -> int | None:
        """Seconds `state`'s server had not answered when an Apus process replaced it."""
        try:
            return int(self._replaced_file(state).read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            return None

    def _attach_or_start(self) -> ServerState:
        with self._shared_lock():
            shared = self._read_state()
            if shared is not None and self._process_alive(shared) and self._responds(shared):
                self._register(Path(shared.clients_dir))
                self._state = shared
                self._status = "running"
                return shared
            if shared is not None:
                self._discard_stale(shared)
            stopped = self.gave_up()
            if stopped is not None:
                self._status = "gave-up"
                raise stopped
            wait = self._not_before - time.monotonic()
            if wait > 0:
                if self._status == "failed" and self._last_error is not None:
                    raise self._last_error  # it failed to start moments ago: say so at once
                time.sleep(wait)
            try:
                state = self._start()
            except EmbeddingUnavailable as exc:
                log.error("embedding server did not start: %s", exc.reason)
                self._last_error = exc
                self._status = "failed"
                self._failures_in_a_row += 1
                self._not_before = time.monotonic() + self._backoff()
                raise
            self._last_error = None
            self._state = state
            self._status = "running"
            return state

    def _start(self) -> ServerState:
        self._check_model_file()
        instance = secrets.token_hex(6)
        runtime = self.state_file.parent
        clients_dir = runtime / f"embed-server-{self._key}-{instance}.clients"
        clients_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        info_file = runtime / f"embed-server-{self._key}-{instance}.info.json"
        self._register(clients_dir)
        api_key = secrets.token_urlsafe(32)
        register_secret(api_key)
        try:
            for attempt in range(2):  # a second try only if the free port was taken meanwhile
                try:
                    port = procs.free_port()
                    return self._launch(instance, clients_dir, info_file, api_key, port)
                except _PortTaken as exc:
                    if attempt == 1:
                        raise exc.error from None
            raise AssertionError("unreachable")
        except BaseException:
            self._drop_registration()
            shutil.rmtree(clients_dir, ignore_errors=True)
            raise

    def _launch(
        self, instance: str, clients_dir: Path, info_file: Path, api_key: str, port: int
    ) -> ServerState:
        spec = self.spec
        log_file = self._log_file()
        _private_log_folder(log_file.parent)
        if log_file.exists():
            os.replace(log_file, log_file.with_suffix(".log.1"))
            os.chmod(log_file.with_suffix(".log.1"), 0o600)  # one an older Apus left readable
        command = [
            *serve_command(),
            "--model", str(spec.model_path),
            "--port", str(port),
            "--ctx", str(spec.context),
            "--batch", str(spec.batch),
            "--gpu-layers", str(spec.gpu_layers),
            "--threads", str(spec.threads),
            "--clients-dir", str(clients_dir),
            "--watch-interval", str(spec.watchdog_interval_seconds),
            "--idle-stop", str(spec.idle_stop_seconds),
            "--info-file", str(info_file),
            "--state-file", str(self.state_file),
        ]  # fmt: skip
        env = server_environment(os.environ, api_key)
        self._status = "starting"
        started = time.time()
        # llama.cpp may write request text into its log: only the user may read it.
        descriptor = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(descriptor, 0o600)
        with os.fdopen(descriptor, "wb") as log_handle:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log_handle,
                stderr=subprocess.STDOUT,
                env=env,
                # Its own session: a Ctrl-C meant for one Apus process must not kill a
                # server that others share; the watchdog ends it when all clients are gone.
                start_new_session=True,
                close_fds=True,
            )
        self._process = process
        self._wait_ready(process, port, api_key, log_file)
        info = procs.read_json(info_file) or {}
        with contextlib.suppress(OSError):
            info_file.unlink()
        # llama.cpp's own report of the load, not the layers asked for, names the device.
        offload = read_offload(
            log_file, spec.model_path, supported=bool(info.get("gpu_offload", False))
        )
        state = ServerState(
            pid=process.pid,
            port=port,
            api_key=api_key,
            model_path=str(spec.model_path),
            model_sha256=spec.model_sha256,
            device=offload.device,
            gpu_layers=int(info.get("gpu_layers", 0)),
            started=started,
            instance=instance,
            clients_dir=str(clients_dir),
            log_file=str(log_file),
            system_info=str(info.get("system_info", "")),
            gpu_offload=offload.supported,
            offloaded_layers=offload.layers,
            model_layers=offload.of,
        )
        procs.write_private_json(self.state_file, asdict(state))
        log.info(
            "embedding server ready in %.1fs: pid %d, port %d, %s (%s), model %s",
            time.time() - started,
            state.pid,
            port,
            state.device,
            offload.describe(),
            spec.model_path.name,
        )
        return state

    def _wait_ready(
        self, process: subprocess.Popen[bytes], port: int, api_key: str, log_file: Path
    ) -> None:
        deadline = time.monotonic() + self.spec.startup_timeout_seconds
        url = f"http://127.0.0.1:{port}{MODELS_PATH}"
        headers = {"Authorization": f"Bearer {api_key}"}
        pause = 0.05
        import httpx  # here, not at the top: a keyword search builds this class, never starts it

        with httpx.Client(timeout=httpx.Timeout(2.0)) as client:
            while True:
                code = process.poll()
                if code is not None:
                    self._process = None
                    raise self._startup_failure(code, log_file)
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(url, headers=headers).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    procs.terminate(process.pid)
                    process.wait()
                    self._process = None
                    timeout = self.spec.startup_timeout_seconds
                    raise EmbeddingUnavailable(
                        f"the embedding server did not become ready within {timeout:g}s "
                        f"(log: {log_file})\n{procs.tail(log_file, lines=_LOG_TAIL_LINES)}",
                        fix="raise memory.search.local.startupTimeoutSeconds, or check the log",
                    )
                time.sleep(pause)
                pause = min(pause * 1.5, 0.25)

    def _startup_failure(self, code: int, log_file: Path) -> Exception:
        log_tail = procs.tail(log_file, lines=200, max_bytes=65536)
        if "address already in use" in log_tail.lower():
            return _PortTaken(
                EmbeddingUnavailable(f"the embedding server could not bind its port:\n{log_tail}")
            )
        if code < 0:  # a native crash while loading: counted like one after it
            record = self.crashes.record(ServerEnd.from_returncode(code, log_tail, str(log_file)))
            self._crash = self._last_seen = record
            self._crashes_seen += 1
            if record.gave_up:
                return _gave_up_error(record)
            return EmbeddingUnavailable(
                f"the embedding server crashed while loading {self.spec.model_path.name}: "
                f"{record.last.describe()}",
                fix=record.last.fix,
            )
        return EmbeddingUnavailable(
            f"the embedding server exited with code {code} while loading "
            f"{self.spec.model_path.name} "
            f"(log: {log_file}):\n{_error_lines(log_tail)}",
            fix="apus models pull  (re-download the model), or set "
            "memory.search.local.modelPath to a working GGUF embedding model",
        )

    def _check_model_file(self) -> None:
        """Refuse a missing or non-GGUF file before paying for a process start."""
        path = self.spec.model_path
        if not path.is_file():
            raise EmbeddingUnavailable(
                f"the model file {path} does not exist", fix="apus models pull"
            )
        try:
            read_gguf_info(path)
        except (GGUFFormatError, OSError) as exc:
            raise EmbeddingUnavailable(
                f"{path} is not a usable GGUF model: {exc}",
                fix="apus models pull  (or point memory.search.local.modelPath at a GGUF file)",
            ) from exc

    def _process_alive(self, state: ServerState) -> bool:
        process = self._process
        if process is not None and process.pid == state.pid:
            code = process.poll()
            if code is None and not procs.pid_alive(state.pid):
                # Killed: its main thread is already a zombie while the kernel still ends the
                # others (llama.cpp's, uvicorn's), and until then waitpid reports nothing. It
                # is gone for every other process (`pid_alive`) and must be for this one too,
                # with the exit status that names the crash: wait the moment it takes.
                code = process.wait()
            if code is None:
                return True
            self._reaped = (state.pid, code)
            self._process = None
            return False
        return procs.pid_alive(state.pid)

    @staticmethod
    def _responds(state: ServerState) -> bool:
        """Whether the server answers HTTP. Its model list is served without the model lock,
        so a server busy with another process's long batch still answers at once."""
        import httpx

        try:
            response = httpx.get(
                f"{state.base_url}{MODELS_PATH}",
                headers={"Authorization": f"Bearer {state.api_key}"},
                timeout=_ATTACH_PROBE_TIMEOUT_S,
            )
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def _read_state(self) -> ServerState | None:
        data = procs.read_json(self.state_file)
        if data is None:
            return None
        state = ServerState.from_dict(data)
        if state is None or state.model_sha256 != self.spec.model_sha256:
            return None
        return state

    def _discard_stale(self, state: ServerState) -> None:
        """Forget a state file whose server is gone or unresponsive."""
        if procs.pid_alive(state.pid) and self._owns(state):
            # Our own hung server (SIGSTOPped, deadlocked): nobody can use it. Noted first
            # (for every process), so its end is told as a hang, not as the SIGKILL it takes.
            self._note_replaced(state)
            procs.terminate(state.pid)
        if not procs.pid_alive(state.pid):  # a crashed server could not clean up after itself
            shutil.rmtree(state.clients_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.state_file.unlink()

    def _owns(self, state: ServerState) -> bool:
        """Whether `state.pid` is still the server we launched (pids get reused)."""
        if self._process is not None and self._process.pid == state.pid:
            return True
        cmdline = Path(f"/proc/{state.pid}/cmdline")
        try:
            return state.instance in cmdline.read_bytes().decode("utf-8", "replace")
        except OSError:
            return False

    def _stop_process(self, state: ServerState) -> None:
        if self._owns(state):
            procs.terminate(state.pid)
        if self._process is not None and self._process.pid == state.pid:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=1.0)
            self._process = None
        with contextlib.suppress(OSError):
            if (procs.read_json(self.state_file) or {}).get("pid") == state.pid:
                self.state_file.unlink()

    def _register(self, clients_dir: Path) -> None:
        self._drop_registration()
        clients_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        client_file = clients_dir / f"{os.getpid()}-{secrets.token_hex(4)}"
        client_file.touch(mode=0o600)
        self._client_file = client_file

    def _drop_registration(self) -> None:
        if self._client_file is not None:
            with contextlib.suppress(OSError):
                self._client_file.unlink()
            self._client_file = None

    def _backoff(self) -> float:
        return RESTART_BACKOFF.delay(self._failures_in_a_row)

    def _log_file(self) -> Path:
        return paths.log_dir() / f"embed-server-{self._key}.log"

    @contextlib.contextmanager
    def _shared_lock(self) -> Iterator[None]:
        from filelock import FileLock

        with FileLock(str(self._lock_file)):
            yield


def _private_log_folder(folder: Path) -> None:
    """The log folder, made 0700 (the server log may hold request text)."""
    try:
        paths.make_private_dirs(folder)
    except OSError as exc:
        raise EmbeddingUnavailable(
            f"the log folder {folder} cannot be made private: {exc}",
            fix=f"remove {folder}, or set XDG_STATE_HOME to a folder of your own",
        ) from exc


def _error_lines(log_text: str) -> str:
    """The log lines that say what went wrong (llama.cpp's own words), else the last lines."""
    lines = log_text.splitlines()
    errors = [line for line in lines if _ERROR_WORDS.search(line)]
    return "\n".join(errors[-_LOG_TAIL_LINES:] or lines[-_LOG_TAIL_LINES:])


def _gave_up_error(record: CrashRecord) -> EmbeddingUnavailable:
    return EmbeddingUnavailable(
        f"the embedding server crashed {record.count} times in a row, last with "
        f"{record.last.describe()}. It is not restarted until the settings, the model or "
        "llama-cpp-python change, or `apus memory index` is run",
        fix=f"{record.last.fix}, then apus memory index",
    )


class _PortTaken(Exception):
    def __init__(self, error: EmbeddingUnavailable) -> None:
        super().__init__(error.reason)
        self.error = error
