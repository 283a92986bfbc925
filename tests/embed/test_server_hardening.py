"""What the managed server shows to others: its log only to the user, nothing to web pages;
and its watchdog, which must not stop a server that is still loading or answering."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from apus import paths
from apus.embed.local.server_manager import ManagedServer, ServerSpec
from apus.embed.local.server_process import (
    API_KEY_ENV,
    EMBEDDINGS_PATH,
    OPENMP_SPIN,
    Watchdog,
    server_environment,
)

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


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc/PID/environ")
def test_the_server_starts_with_openmp_spinning_bounded(
    tiny_model: Path,
    managed: list[ManagedServer],
    fast_spec: SpecFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """llama.cpp's OpenMP threads would spin 300,000 times at each barrier: on busy cores
    that burns the time the other thread needs (the reason is in server_process.py)."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    server = ManagedServer(fast_spec(tiny_model))
    managed.append(server)
    env = environ_of(server.ensure_running().pid)
    assert env["GOMP_SPINCOUNT"] == OPENMP_SPIN["GOMP_SPINCOUNT"]


def test_openmp_spinning_is_bounded_where_the_user_set_nothing() -> None:
    assert server_environment({"PATH": "/bin"}, "key") == {
        "PATH": "/bin",
        API_KEY_ENV: "key",
        **OPENMP_SPIN,
    }


@pytest.mark.parametrize("own", [{"OMP_WAIT_POLICY": "active"}, {"GOMP_SPINCOUNT": "INFINITY"}])
def test_a_users_own_openmp_setting_wins(own: dict[str, str]) -> None:
    env = server_environment({"PATH": "/bin", **own}, "key")
    assert env == {"PATH": "/bin", **own, API_KEY_ENV: "key"}
