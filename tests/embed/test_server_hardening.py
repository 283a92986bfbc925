"""What the managed server shows to others: its log only to the user, nothing to web pages;
and its watchdog, which must not stop a server that is still loading or answering."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import httpx

from apus import paths
from apus.embed.local.server_manager import ManagedServer, ServerSpec
from apus.embed.local.server_process import EMBEDDINGS_PATH, Watchdog

SpecFactory = Callable[..., ServerSpec]
EVIL = "http://evil.example"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_server_log_is_private_in_a_private_folder(
    tiny_model: Path, managed: list[ManagedServer], fast_spec: SpecFactory
) -> None:
    folder = paths.log_dir()
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)  # as an older Apus (or a umask) left it
    server = ManagedServer(fast_spec(tiny_model))
    managed.append(server)
    old_log = Path(server.describe()["log"])
    old_log.write_text("a request body an older Apus logged\n", encoding="utf-8")
    old_log.chmod(0o644)

    log_file = Path(server.ensure_running().log_file)
    assert log_file == old_log
    assert mode(log_file) == 0o600
    assert mode(log_file.with_suffix(".log.1")) == 0o600
    assert mode(folder) == 0o700


def test_the_server_does_not_answer_to_browser_origins(
    tiny_model: Path, managed: list[ManagedServer], fast_spec: SpecFactory
) -> None:
    server = ManagedServer(fast_spec(tiny_model))
    managed.append(server)
    state = server.ensure_running()
    preflight = httpx.options(
        state.base_url + EMBEDDINGS_PATH,
        headers={
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )
    assert "access-control-allow-origin" not in preflight.headers
    answer = httpx.post(
        state.base_url + EMBEDDINGS_PATH,
        headers={"Origin": EVIL, "Authorization": f"Bearer {state.api_key}"},
        json={"input": ["the cat"]},
    )
    assert answer.status_code == 200  # Apus itself (no Origin needed) is served as before
    assert "access-control-allow-origin" not in answer.headers
    assert "access-control-allow-credentials" not in answer.headers


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_idle_time_counts_only_once_ready_and_between_requests(tmp_path: Path) -> None:
    clients = tmp_path / "clients"
    clients.mkdir()
    (clients / "1-client").touch()  # pid 1 is always alive: one client that stays
    clock = Clock()
    watchdog = Watchdog(clients, interval_s=0.1, idle_stop_s=10, clock=clock)

    clock.now += 60  # a model that takes a minute to load is not idle
    assert watchdog.reason_to_stop() is None
    watchdog.mark_ready()
    clock.now += 9
    assert watchdog.reason_to_stop() is None
    watchdog.request_started()
    clock.now += 60  # a long batch is use
    assert watchdog.reason_to_stop() is None
    watchdog.request_finished()
    clock.now += 9
    assert watchdog.reason_to_stop() is None
    clock.now += 2
    assert watchdog.reason_to_stop() == "idle for 10s"
