"""Entry point of the managed embedding server process (`embedding_app` under uvicorn).

Run as `python -m apus.embed.local.server_process ...`, or as `apus _serve-embeddings ...` from a
frozen binary. A watchdog thread ends the process when no registered client process is alive
any more (even one killed with SIGKILL) or when nothing was embedded for `--idle-stop`
seconds, so the server never outlives the Apus processes that use it.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apus.embed.local.procs import pid_alive, read_json, write_private_json

if TYPE_CHECKING:
    from starlette.applications import Starlette

    Loaded = tuple[Starlette, str, int]  # the app, its device, the GPU layers asked for

API_KEY_ENV = "_APUS_EMBED_SERVER_KEY"
EMBEDDINGS_PATH = "/v1/embeddings"
# Answered without the model lock, so a server busy with another process's long batch still
# shows at once that it is alive (the readiness and attach probes).
MODELS_PATH = "/v1/models"
_EXIT_GRACE_S = 5.0

# llama.cpp's CPU threads meet at a barrier after every operation, and GNU OpenMP's threads
# spin 300,000 times there before they sleep. On cores that other programs keep busy, that
# spinning takes the time slices the late thread needs, so a barrier can cost a whole slice.
# The shorter the operations, the worse: beside two busy loops a small model used five times
# the CPU for the same batches, and EmbeddingGemma had rounds where 40 queries took 5.7-21.6 s
# instead of 2.3-4.1 s. A few thousand spins still catch a barrier's usual wait (a quiet
# machine's speed is unchanged); a user's own OpenMP settings win.
OPENMP_SPIN = {"GOMP_SPINCOUNT": "10000"}
_OPENMP_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")

log = logging.getLogger("apus.embed.serve")


def server_environment(environ: Mapping[str, str], api_key: str) -> dict[str, str]:
    """The server process's environment: the caller's, its key, and OpenMP's spinning bounded
    unless the user set OpenMP's wait policy themselves."""
    env = {**environ, API_KEY_ENV: api_key}
    if not any(name in environ for name in _OPENMP_SETTINGS):
        env.update(OPENMP_SPIN)
    return env


def client_pids(clients_dir: Path) -> list[int]:
    """Live client pids registered in `clients_dir` (files named `<pid>-<token>`)."""
    alive = []
    try:
        entries = list(clients_dir.iterdir())
    except OSError:
        return []
    for entry in entries:
        head = entry.name.split("-", 1)[0]
        if not head.isdigit():
            continue
        pid = int(head)
        if pid_alive(pid):
            alive.append(pid)
        else:
            with contextlib.suppress(OSError):
                entry.unlink()  # a client that died without saying goodbye
    return alive


class Watchdog:
    """Decides when the server should stop: no live clients, or idle for too long.

    Idle time counts only once the server is ready and while no request is in flight: a
    model that takes longer to load than `idle_stop_s` (a slow disk, a busy machine) must not
    be stopped before its first request, nor a long batch in the middle of it.
    """

    def __init__(
        self,
        clients_dir: Path,
        *,
        interval_s: float,
        idle_stop_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clients_dir = clients_dir
        self.interval_s = interval_s
        self.idle_stop_s = idle_stop_s
        self._clock = clock
        self._lock = threading.Lock()
        self._idle_since: float | None = None  # None: loading, or a request is running
        self._in_flight = 0
        self.stop_reason: str | None = None
        self._request_stop: Callable[[], None] = lambda: os._exit(0)

    def mark_ready(self) -> None:
        """The model is loaded and the server is about to answer: idle time starts now."""
        with self._lock:
            if self._in_flight == 0:
                self._idle_since = self._clock()

    def request_started(self) -> None:
        with self._lock:
            self._in_flight += 1
            self._idle_since = None

    def request_finished(self) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)
            if self._in_flight == 0:
                self._idle_since = self._clock()

    def on_stop(self, request_stop: Callable[[], None]) -> None:
        self._request_stop = request_stop

    def reason_to_stop(self) -> str | None:
        if not client_pids(self.clients_dir):
            return "no Apus process uses the server any more"
        with self._lock:
            idle_since = self._idle_since
        if (
            self.idle_stop_s > 0
            and idle_since is not None
            and self._clock() - idle_since > self.idle_stop_s
        ):
            return f"idle for {self.idle_stop_s:g}s"
        return None

    def run(self) -> None:
        while True:
            time.sleep(self.interval_s)
            reason = self.reason_to_stop()
            if reason:
                self.stop_reason = reason
                log.warning("stopping: %s", reason)
                self._request_stop()
                # uvicorn waits for open connections; never let that keep us alive.
                time.sleep(_EXIT_GRACE_S)
                os._exit(0)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="apus _serve-embeddings", description=__doc__)
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--port", required=True, type=int)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--ctx", required=True, type=int)
    parser.add_argument("--batch", required=True, type=int)
    parser.add_argument("--gpu-layers", type=int, default=-1)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--clients-dir", required=True, type=Path)
    parser.add_argument("--watch-interval", type=float, default=2.0)
    parser.add_argument("--idle-stop", type=float, default=0.0)
    parser.add_argument("--info-file", required=True, type=Path)
    parser.add_argument("--state-file", type=Path)
    return parser.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # A native crash (SIGILL, SIGSEGV, SIGABRT) writes its name into the log before the
    # process dies, so a client that did not start this server can still say what happened.
    faulthandler.enable(all_threads=False)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    api_key = os.environ.pop(API_KEY_ENV, "")
    if not api_key:
        log.error("no API key in %s; refusing to serve without one", API_KEY_ENV)
        return 2

    watchdog = Watchdog(
        args.clients_dir, interval_s=args.watch_interval, idle_stop_s=args.idle_stop
    )
    # Started before the model loads: a client that dies during a slow load still ends us.
    threading.Thread(target=watchdog.run, name="apus-serve-watchdog", daemon=True).start()

    loaded = _load_app(args, api_key, watchdog)
    if loaded is None:
        return 3
    app, device, gpu_layers = loaded
    write_private_json(
        args.info_file,
        {
            "pid": os.getpid(),
            "device": device,
            "gpu_layers": gpu_layers,
            "gpu_offload": _gpu_offload(),
            "system_info": _system_info(),
        },
    )
    watchdog.mark_ready()
    return _serve(app, args, watchdog)


def _load_app(args: argparse.Namespace, api_key: str, watchdog: Watchdog) -> Loaded | None:
    """The embedding app with the model loaded: (app, device, layers); None when the model
    cannot be loaded (the log says why)."""
    import llama_cpp

    from apus.embed.local.embedding_app import create_app

    offload = _gpu_offload()
    gpu_layers = (-1 if args.gpu_layers < 0 else args.gpu_layers) if offload else 0
    device = "gpu" if gpu_layers != 0 else "cpu"
    log.info("llama.cpp GPU offload %s; n_gpu_layers=%d", offload, gpu_layers)
    threads: dict[str, Any] = {}
    if args.threads > 0:
        threads = {"n_threads": args.threads, "n_threads_batch": args.threads}
    try:
        model = llama_cpp.Llama(
            model_path=str(args.model),
            embedding=True,
            n_ctx=args.ctx,
            # Non-causal embedding models must see a whole input in one micro-batch.
            n_batch=args.batch,
            n_ubatch=args.batch,
            n_gpu_layers=gpu_layers,
            # Kept in RAM where the system allows, as llama-cpp-python's own server keeps it.
            use_mlock=bool(llama_cpp.llama_supports_mlock()),
            verbose=True,  # llama.cpp's load report (offloaded layers) goes to the log
            **threads,
        )
    except Exception as exc:  # the parent shows this log's error lines to the user
        log.error("cannot load model %s: %s", args.model.name, exc)
        return None
    app = create_app(model, alias=args.model.name, api_key=api_key, meter=watchdog)
    return app, device, gpu_layers


def _gpu_offload() -> bool:
    """llama.cpp's answer: whether this build can put layers on a GPU at all."""
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def _system_info() -> str:
    """llama.cpp's line of the CPU features and backends this build uses."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info()
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    return text.strip()


def _serve(app: Any, args: argparse.Namespace, watchdog: Watchdog) -> int:
    import uvicorn

    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=int(_EXIT_GRACE_S),
    )
    server = uvicorn.Server(config)

    def request_stop() -> None:
        server.should_exit = True

    watchdog.on_stop(request_stop)
    try:
        server.run()
    finally:
        _forget_state(args.state_file)
        shutil.rmtree(args.clients_dir, ignore_errors=True)
    if not server.started and watchdog.stop_reason is None:
        return 1  # could not bind the port (the log says why)
    return 0


def _forget_state(state_file: Path | None) -> None:
    """Remove the shared state file if it still describes this process."""
    if state_file is None:
        return
    state = read_json(state_file)
    # A one-file binary runs as two processes: the recorded pid is its bootloader, our parent.
    owners = {os.getpid(), os.getppid()} if getattr(sys, "frozen", False) else {os.getpid()}
    if state is not None and state.get("pid") in owners:
        with contextlib.suppress(OSError):
            state_file.unlink()


if __name__ == "__main__":
    sys.exit(main())
