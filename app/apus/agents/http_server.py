"""`apus mcp --http`: the same server as stdio on the MCP SDK's Streamable HTTP transport
(one endpoint, `/mcp`), for many clients at once, safe by default:

- it binds 127.0.0.1 unless told otherwise; every request's `Host` must name the bound
  address (or `localhost`) and an `Origin`, when sent, must be a loopback one (a web page
  cannot reach the memory through DNS rebinding): the SDK's transport-security settings,
  checked here for every path before anything else, and again by the SDK's transport;
- a bind other machines can reach needs the bearer token (`http_token.py`): a request
  without it, or with another, gets 401 and nothing else;
- a body over `MAX_BODY_BYTES` gets 413, a request that does not arrive whole within
  `REQUEST_DEADLINE_S` (a slow or half-open client) loses its connection, sessions past
  `MAX_SESSIONS` get 503 and idle ones end after `SESSION_IDLE_S`: other clients go on;
- SIGTERM stops it cleanly: no new connection is accepted, and the calls in flight are
  answered (for up to `DRAIN_S`) before the session closes.

Answers are JSON, not a stream per call: a stream would be cut at shutdown with its call.
"""

from __future__ import annotations

import asyncio
import ipaddress
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass

import h11
import uvicorn
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from apus.agents.http_token import matches
from apus.errors import ApusError

DEFAULT_PORT = 8765
ENDPOINT = "/mcp"
# The largest request is a memory_write at the largest memory.write.maxEntryChars (100,000
# characters), each at most 12 bytes written as JSON escapes (\ud83d\ude00).
MAX_BODY_BYTES = 2 * 1024 * 1024
# A request's head and body arrive within this, or the connection is closed: a few bytes a
# minute must not hold a connection (and a place among MAX_CONNECTIONS) for ever.
REQUEST_DEADLINE_S = 30.0
# Sessions open at once (each client keeps one): room for every agent of a machine and more;
# past it a new session gets 503 while the open ones go on.
MAX_SESSIONS = 100
# A session with nothing in flight for this long ends (its client starts a new one).
SESSION_IDLE_S = 30 * 60
# Connections (and requests) at once; past it, 503.
MAX_CONNECTIONS = 256
# How long a stop waits for the calls in flight: a write waits up to two minutes
# (memory.session.INDEX_WAIT_S) for its entry to be indexed.
DRAIN_S = 130
# Idle keep-alive connections are closed after this (uvicorn's default).
KEEP_ALIVE_S = 5

_LOOPBACK_NAMES = ("localhost",)


class ListenError(ApusError):
    """The address cannot be listened on."""


@dataclass(frozen=True)
class Binding:
    """Where the server listens, and the `Host` names requests may use besides its own."""

    host: str
    port: int
    extra_hosts: tuple[str, ...] = ()

    @property
    def loopback(self) -> bool:
        """Whether only this machine can connect."""
        return is_loopback(self.host)

    @property
    def url(self) -> str:
        """Where clients reach it: on every address (0.0.0.0, ::), by this machine's name."""
        host = socket.gethostname() if _is_wildcard(self.host) else _host_in_url(self.host)
        return f"http://{host}:{self.port}{ENDPOINT}"

    def security(self) -> TransportSecuritySettings:
        """The SDK's DNS-rebinding settings: the Host names of this binding, loopback
        origins only."""
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{name}:{self.port}" for name in self.host_names()],
            allowed_origins=[
                f"{scheme}://{name}{port}"
                for scheme in ("http", "https")
                for name in ("127.0.0.1", "localhost", "[::1]")
                for port in ("", ":*")
            ],
        )

    def host_names(self) -> list[str]:
        """What a request's Host may name: the bound address and `localhost` (for a
        wildcard bind, this machine's names and addresses), and the extra names asked for."""
        names = ["localhost", _host_in_url(self.host)]
        if self.loopback:
            names += ["127.0.0.1", "[::1]"] if self.host in _LOOPBACK_NAMES else []
        elif _is_wildcard(self.host):
            names += ["127.0.0.1", "[::1]", *_machine_names()]
        names += list(self.extra_hosts)
        return list(dict.fromkeys(names))


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle off (TCP_NODELAY) only on sockets
    # that say they are TCP, and with it on, every answer waited 40 ms for a delayed ACK
    # (44 ms a ping; 0.9 ms with it off).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(socket.SOMAXCONN)
    except OSError as exc:
        sock.close()
        raise ListenError(
            f"Cannot listen on {host}:{port}: {exc.strerror or exc}.",
            fix="apus mcp --http --port N  (another port; 0 picks a free one)",
        ) from None
    return sock


class Guard:
    """The checks every request passes before the MCP app sees it: the bearer token (when
    one is required: 401 and nothing else), then Host and Origin (the SDK's checks: 421,
    403). Tells `on_ready` once the app has started (its lifespan), when requests are
    served."""

    def __init__(
        self,
        app: ASGIApp,
        security: TransportSecuritySettings,
        *,
        token: str | None,
        on_ready: Callable[[], None] = lambda: None,
    ) -> None:
        self.app = app
        self._security = TransportSecurityMiddleware(security)
        self._token = token
        self._on_ready = on_ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, self._telling_ready(send))
            return
        if scope["type"] != "http":
            await Response(status_code=404)(scope, receive, send)
            return
        if self._token is not None and not self._authorised(scope):
            # No body, no hint: a prober learns nothing but that a token is wanted.
            await Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})(
                scope, receive, send
            )
            return
        refused = await self._security.validate_request(Request(scope), is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _authorised(self, scope: Scope) -> bool:
        assert self._token is not None
        scheme, _, given = Headers(scope=scope).get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and matches(given.strip(), self._token)

    def _telling_ready(self, send: Send) -> Send:
        async def sent(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                self._on_ready()

        return sent


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 connection, with a deadline for each request to arrive whole (head
    and body): a client that connects and says nothing, or trickles its bytes, is cut off
    after `REQUEST_DEADLINE_S` instead of holding the connection."""

    _request_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._await_request()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
            self._stop_waiting()  # the request is in whole (or the connection is done)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._await_request()  # the next request on this connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _await_request(self) -> None:
        self._stop_waiting()
        self._request_timer = self.loop.call_later(REQUEST_DEADLINE_S, self._cut_off)

    def _stop_waiting(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

    def _cut_off(self) -> None:
        self._request_timer = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            self.transport.close()


def run(app: ASGIApp, sock: socket.socket) -> None:
    """Serve `app` on the listening `sock` until SIGTERM or SIGINT, then drain and stop."""
    config = uvicorn.Config(
        app,
        http=DeadlineH11Protocol,
        lifespan="on",
        log_config=None,  # the server's own logging (mcp.log and stderr)
        access_log=False,
        proxy_headers=False,  # no proxy is trusted to say where a request came from
        server_header=False,
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=KEEP_ALIVE_S,
        timeout_graceful_shutdown=DRAIN_S,
    )
    # uvicorn takes SIGTERM while it serves and raises it again once it has stopped, for the
    # handler it found: this one, so that a clean stop ends the process with status 0.
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stopped(_signum: int, _frame: object) -> None:
    """SIGTERM once the server has stopped: nothing is left to do."""


def _host_in_url(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("0.0.0.0", "::", "")


def _machine_names() -> list[str]:
    """This machine's name and the addresses it resolves to: what a client on the network
    puts in Host when the server listens on every interface."""
    name = socket.gethostname()
    names = {name, socket.getfqdn()}
    try:
        for *_, address in socket.getaddrinfo(name, None, type=socket.SOCK_STREAM):
            names.add(_host_in_url(str(address[0])))
    except OSError:
        pass  # a name that does not resolve: --allow-host adds what clients use
    return sorted(names)
