"""`apus mcp --http`: the same tools and answers as stdio, for many clients at once, safe by
default (loopback, Host and Origin checked, a bearer token beyond loopback, bounded bodies,
sessions and slow clients), and a clean stop on SIGTERM.

Every server here is a real `apus mcp --http` process on 127.0.0.1 (a free port), driven by
the SDK's own Streamable HTTP client."""

from __future__ import annotations

import asyncio
import os
import plistlib
import shlex
import signal
import socket
import stat
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp.client.session import ClientSession

from agents.mcp_client import agent, server_env
from agents.mcp_http import http_agent, http_server, raw
from apus.agents import http_server as http_module
from apus.agents.http_token import token_file
from apus.agents.service import service_file
from apus.cli.agents import DEFAULT_PORT
from support.holds import Hold
from support.vaults import index_vault, run_apus, write_note

TODAY = "2026-12-02"
DAILY = f"memory/{TODAY}.md"
READ_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("memory_search", {"query": "router closet"}),
    ("memory_search", {"query": "deploy", "perNote": 1, "maxResults": 3}),
    ("memory_get", {"path": "notes/router.md"}),
    ("memory_get", {"path": "notes/router.md#L3-L3"}),
    ("memory_related", {"path": "notes/router.md"}),
    ("memory_recall", {"message": "how do I deploy the blog"}),
    ("sessions_search", {"query": "router"}),
    ("sessions_history", {"sessionKey": "main/nowhere"}),
]
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}'
)


def writable_env(**extra: str) -> dict[str, str]:
    return server_env(APUS_TODAY=TODAY, APUS_MEMORY__WRITE__ENABLED="true", **extra)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "MEMORY.md", "# Memory\n\nThe blog is deployed with make deploy.\n")
    write_note(root, "notes/router.md", "# Router\n\nIn the hallway closet, by the modem.\n")
    write_note(root, "notes/deploy.md", "# Deploy\n\nmake deploy pushes the blog.\n")
    index_vault(root)
    return root


async def _answer(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    """What a call answers, structured, or the error text."""
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        return ("error", [getattr(block, "text", "") for block in result.content])
    return result.structured_content


def test_the_cli_and_the_server_agree_on_the_default_port() -> None:
    assert DEFAULT_PORT == http_module.DEFAULT_PORT


async def test_every_tool_answers_over_http_as_over_stdio(vault: Path) -> None:
    env = writable_env()
    with http_server(vault, env) as server:
        async with http_agent(server.url) as http, agent(vault, env) as stdio:
            listed = {tool.name: tool for tool in (await http.list_tools()).tools}
            expected = {tool.name: tool for tool in (await stdio.list_tools()).tools}
            assert listed == expected and "memory_write" in listed
            assert http.instructions == stdio.instructions
            for tool, arguments in READ_CALLS:
                by_http = await _answer(http, tool, arguments)
                by_stdio = await _answer(stdio, tool, arguments)
                assert by_http == by_stdio, (tool, arguments, by_http, by_stdio)
            over_http = await _answer(http, "memory_status", {})
            over_stdio = await _answer(stdio, "memory_status", {})
            assert over_http["files"] == over_stdio["files"] == 3
            assert over_http.keys() == over_stdio.keys()

            written = await _answer(http, "memory_write", {"text": "The VPN moved to WireGuard."})
            assert written["path"] == DAILY and written["indexed"] is True
            for session in (http, stdio):
                found = await _answer(session, "memory_search", {"query": "WireGuard"})
                [hit] = found["results"]
                assert hit["path"] == DAILY
                first, last = (int(n) for n in hit["citation"].rsplit("#L", 1)[1].split("-L"))
                assert first <= written["startLine"] <= last


async def test_two_clients_search_at_once(vault: Path) -> None:
    with http_server(vault) as server:

        async def searches(query: str, path: str) -> list[str]:
            async with http_agent(server.url) as session:
                found = []
                for _ in range(5):
                    answer = await _answer(session, "memory_search", {"query": query})
                    assert answer["results"][0]["path"] == path
                    found.append(answer["results"][0]["path"])
                return found

        first, second = await asyncio.gather(
            searches("router closet", "notes/router.md"), searches("deploy", "notes/deploy.md")
        )
        assert first == ["notes/router.md"] * 5 and second == ["notes/deploy.md"] * 5


async def test_three_clients_and_an_editor_write_to_one_daily_note(vault: Path) -> None:
    write_note(vault, DAILY, f"# {TODAY}\n\nStarted the day by hand.\n")
    done = threading.Event()
    edits: list[str] = []

    def editor() -> None:
        # An editor appending whole lines, as `echo >> note` does, while the agents write.
        while (not done.is_set() or len(edits) < 5) and len(edits) < 3000:
            line = f"editor line {len(edits)}"
            fd = os.open(vault / DAILY, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
            edits.append(line)

    with http_server(vault, writable_env()) as server:

        async def writes(name: str) -> list[dict[str, Any]]:
            async with http_agent(server.url) as session:
                return [
                    await _answer(session, "memory_write", {"text": f"entry {name}-{n} ok"})
                    for n in range(4)
                ]

        thread = threading.Thread(target=editor)
        thread.start()
        try:
            answers = await asyncio.gather(writes("a"), writes("b"), writes("c"))
        finally:
            done.set()
            thread.join()
        async with http_agent(server.url) as session:
            for name in ("a", "b", "c"):
                for n in range(4):
                    query = f'"entry {name}-{n} ok"'
                    found = await _answer(session, "memory_search", {"query": query})
                    assert found["results"][0]["path"] == DAILY, query
    lines = (vault / DAILY).read_text(encoding="utf-8").splitlines()
    assert lines[:3] == [f"# {TODAY}", "", "Started the day by hand."]
    counts = Counter(lines)
    assert all(counts[line] == 1 for line in edits)  # every editor line whole, once
    for name in ("a", "b", "c"):
        for n in range(4):
            text = f"entry {name}-{n} ok"
            assert counts[text] == 1, text
            assert lines[lines.index(text) - 1].startswith("## "), text
    assert all(answer["indexed"] for group in answers for answer in group)


def test_host_and_origin_probes_are_refused(vault: Path) -> None:
    with http_server(vault) as server:
        port, url = server.port, server.url
        for host in ("evil.example", f"evil.example:{port}", f"localhost.evil.example:{port}"):
            refused = raw(url, headers={"host": host}, body=INITIALIZE)
            assert refused.status_code == 421, host
            # Not only the endpoint: nothing answers a page that rebinds a name.
            assert raw(url.replace("/mcp", "/"), headers={"host": host}).status_code == 421
        for origin in (
            "http://evil.example",
            f"http://evil.example:{port}",
            "http://localhost.evil.example:3000",
            "null",
        ):
            refused = raw(url, headers={"origin": origin}, body=INITIALIZE)
            assert refused.status_code == 403, origin
        # A local tool (the Inspector's page, say) on another loopback port may call it.
        local = raw(url, headers={"origin": "http://localhost:6274"}, body=INITIALIZE)
        assert local.status_code == 200 and local.headers["mcp-session-id"]
        assert raw(url, headers={"host": f"localhost:{port}"}, body=INITIALIZE).status_code == 200
        too_big = raw(url, body=b" " * (http_module.MAX_BODY_BYTES + 1))
        assert too_big.status_code == 413


def test_a_flood_of_sessions_is_bounded_and_the_open_ones_go_on(vault: Path) -> None:
    with http_server(vault) as server:
        url = server.url
        opened = [raw(url, body=INITIALIZE) for _ in range(http_module.MAX_SESSIONS)]
        assert all(answer.status_code == 200 for answer in opened)
        assert raw(url, body=INITIALIZE).status_code == 503
        session = {"mcp-session-id": opened[0].headers["mcp-session-id"]}
        session["mcp-protocol-version"] = "2025-06-18"
        listed = raw(url, headers=session, body=b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
        assert listed.status_code == 200 and "memory_search" in listed.text
        assert raw(url, method="DELETE", headers=session).status_code == 200
        assert raw(url, body=INITIALIZE).status_code == 200  # room again


def test_a_non_loopback_bind_without_a_token_refuses_to_start(vault: Path) -> None:
    assert not token_file().exists()
    refused = run_apus(
        "--vault",
        vault,
        "mcp",
        "--http",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        env=server_env(),
        expect=1,
    )
    assert "bearer token" in refused.stderr and "Fix: apus mcp --token" in refused.stderr


async def test_beyond_loopback_only_the_token_opens_the_door(vault: Path) -> None:
    made = run_apus("mcp", "--token", env=server_env()).stdout.strip()
    path = token_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(made) >= 32 and run_apus("mcp", "--token", env=server_env()).stdout.strip() == made

    with http_server(vault, server_env(), "--host", "0.0.0.0") as server:
        url = f"http://127.0.0.1:{server.port}/mcp"
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": made}):
            refused = raw(url, headers=headers, body=INITIALIZE)
            assert refused.status_code == 401 and refused.content == b"", headers
            assert refused.headers["www-authenticate"] == "Bearer"
        async with http_agent(url, headers={"authorization": f"Bearer {made}"}) as session:
            found = await _answer(session, "memory_search", {"query": "router closet"})
            assert found["results"][0]["path"] == "notes/router.md"
    logs = server.stderr + "".join(
        log.read_text(encoding="utf-8") for log in Path(os.environ["XDG_STATE_HOME"]).rglob("*.log")
    )
    assert made not in logs

    path.chmod(0o644)  # a token others can read is no secret: refused
    shared = run_apus(
        "--vault",
        vault,
        "mcp",
        "--http",
        "--host",
        "0.0.0.0",
        "--port",
        "0",
        env=server_env(),
        expect=1,
    )
    assert "can be read by other users" in shared.stderr and "chmod 600" in shared.stderr


async def test_sigterm_answers_the_calls_in_flight_then_stops(vault: Path, tmp_path: Path) -> None:
    hold = Hold(tmp_path / "hold")  # the start-up sync holds the writer: a write waits on it
    with http_server(vault, writable_env(**hold.env("start:0"))) as server:
        hold.wait_held()
        async with http_agent(server.url) as session:
            await session.list_tools()  # known tools: a call asks nothing more
            text = "Written while the server stops."
            call = asyncio.create_task(session.call_tool("memory_write", {"text": text}))
            while text not in _text_of(vault / DAILY):
                await asyncio.sleep(0.01)  # the entry is written; its indexing waits
            server.process.send_signal(signal.SIGTERM)
            while _accepts(server.port):  # it stops taking connections first
                await asyncio.sleep(0.01)
            with pytest.raises(httpx2.ConnectError):
                raw(server.url, body=INITIALIZE)  # a call after the stop is refused
            hold.release()
            answered = await asyncio.wait_for(call, timeout=120)
            assert not answered.is_error and answered.structured_content is not None
            assert answered.structured_content["indexed"] is True
            assert server.exit_status() == 0  # SIGTERM was sent: not a second one
    assert _text_of(vault / DAILY).count(text) == 1


def _text_of(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return True
    except ConnectionRefusedError:
        return False


async def _small_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@contextmanager
def _serving_small_app() -> Iterator[tuple[uvicorn.Server, int]]:
    """The server's own listening socket and connection class under uvicorn, in a thread,
    serving a small app."""
    sock = http_module.listen("127.0.0.1", 0)
    config = uvicorn.Config(
        _small_app, http=http_module.DeadlineH11Protocol, lifespan="off", log_config=None
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]})
    thread.start()
    try:
        yield server, sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def test_a_client_that_trickles_its_request_is_cut_off_and_others_are_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the deadline is shorter, so the test waits a moment, not half a minute.
    monkeypatch.setattr(http_module, "REQUEST_DEADLINE_S", 0.3)
    with _serving_small_app() as (_server, port):
        silent = socket.create_connection(("127.0.0.1", port), timeout=60)
        head = socket.create_connection(("127.0.0.1", port), timeout=60)
        head.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")  # and no more of its head
        body = socket.create_connection(("127.0.0.1", port), timeout=60)
        body.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        # Meanwhile another client is answered at once.
        with httpx2.Client(timeout=60) as client:
            assert client.get(f"http://127.0.0.1:{port}/").text == "ok"
        for stalled in (silent, head, body):
            assert stalled.recv(1024) == b""  # the server closed it
            stalled.close()


def test_answers_are_not_held_back_for_an_acknowledgement() -> None:
    # An answer goes out in two writes (head, then body): with Nagle's algorithm on, the
    # second waits for the client's delayed ACK, 40 ms a call.
    with _serving_small_app() as (server, port), httpx2.Client(timeout=60) as client:
        assert client.get(f"http://127.0.0.1:{port}/").text == "ok"
        [connection] = server.server_state.connections
        accepted = connection.transport.get_extra_info("socket")  # type: ignore[attr-defined]
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_print_service_writes_a_unit_that_runs_this_server(vault: Path) -> None:
    unit = run_apus(
        "--vault",
        vault,
        "mcp",
        "--http",
        "--port",
        "8799",
        "--writable",
        "--print-service",
        env=server_env(),
    ).stdout
    [exec_start] = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    command = shlex.split(exec_start.removeprefix("ExecStart="))
    assert command[command.index("--vault") + 1] == str(vault.resolve())
    assert command[command.index("mcp") :] == [
        "mcp",
        "--http",
        "--host",
        "127.0.0.1",
        "--port",
        "8799",
        "--writable",
    ]
    assert "WantedBy=default.target" in unit and "systemctl --user enable" in unit
    plist = service_file("launchd", command, "/tmp/apus-mcp-http.log")
    loaded = plistlib.loads(plist.encode("utf-8"))
    assert loaded["ProgramArguments"] == command and loaded["RunAtLoad"] is True
    # Printed, not installed.
    assert not (Path(os.environ["XDG_CONFIG_HOME"]) / "systemd").exists()


def test_the_host_names_a_binding_answers_to() -> None:
    local = http_module.Binding("127.0.0.1", 8765)
    assert local.loopback and local.url == "http://127.0.0.1:8765/mcp"
    assert set(local.security().allowed_hosts) == {"127.0.0.1:8765", "localhost:8765"}
    assert http_module.Binding("::1", 9).security().allowed_hosts == ["localhost:9", "[::1]:9"]
    named = http_module.Binding("localhost", 9)
    assert set(named.host_names()) == {"localhost", "127.0.0.1", "[::1]"}
    lan = http_module.Binding("192.168.1.5", 9, ("memory.home",))
    assert not lan.loopback and lan.host_names() == ["localhost", "192.168.1.5", "memory.home"]
    every = http_module.Binding("0.0.0.0", 9)
    assert not every.loopback and socket.gethostname() in every.host_names()
    assert every.url == f"http://{socket.gethostname()}:9/mcp"
    origins = local.security().allowed_origins
    assert "http://localhost:*" in origins and "https://127.0.0.1" in origins
    assert not any("evil" in origin or origin == "null" for origin in origins)
