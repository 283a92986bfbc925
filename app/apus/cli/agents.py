"""`apus mcp`: the agent face, a Model Context Protocol server on stdin/stdout, or on
Streamable HTTP for many clients at once (`--http`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from apus.cli.context import current_source, guarded

if TYPE_CHECKING:
    from apus.config import SettingsSource

# Kept in step with apus.agents.http_server.DEFAULT_PORT (not imported: `apus --help` stays
# quick); a test holds them equal.
DEFAULT_PORT = 8765


@click.command("mcp")
@click.option(
    "--writable",
    is_flag=True,
    help="Offer memory_write: the agent may append entries to today's daily note, MEMORY.md "
    "and USER.md (as memory.write.enabled = true).",
)
@click.option(
    "--http",
    "over_http",
    is_flag=True,
    help="Serve on Streamable HTTP at http://HOST:PORT/mcp (many clients, one warm server) "
    "instead of stdio.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on (--http). Anything but a loopback address needs the "
    "bearer token (--token).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port to listen on (--http); 0 picks a free one.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Another name clients may reach the server by (the Host header: a DNS or container "
    "name), besides the bound address and localhost (repeatable; --http).",
)
@click.option(
    "--token",
    "show_token",
    is_flag=True,
    help="Print the bearer token clients must send when the server listens beyond loopback "
    "(made on first use, in a file only you can read), then exit.",
)
@click.option(
    "--print-service",
    is_flag=True,
    help="Print a user service (systemd unit, or launchd plist on macOS) that runs this "
    "HTTP server, then exit; nothing is installed.",
)
@guarded
def mcp(
    writable: bool,
    over_http: bool,
    host: str,
    port: int,
    allow_hosts: tuple[str, ...],
    show_token: bool,
    print_service: bool,
) -> None:
    """Serve this vault's memory to agents over MCP (stdio, or Streamable HTTP with --http).

    Tools: memory_search, memory_get, memory_related, memory_recall, memory_status,
    sessions_search, sessions_history, and memory_write when writing is on. The index
    follows the vault while it runs. Register it with an MCP client as the command
    `apus --vault PATH mcp`, or with --http as the URL it prints (see the README).

    Over HTTP it listens on 127.0.0.1 and answers only requests whose Host names it (or
    localhost) and whose Origin, if any, is a loopback one. Listening on another address
    (--host 0.0.0.0) needs a bearer token: `apus mcp --token` makes and prints it, and
    clients send `Authorization: Bearer TOKEN`. SIGTERM stops it once the calls in flight
    are answered.
    """
    import dataclasses

    if show_token:
        _print_token()
        return
    source = current_source()
    if writable:
        overrides = {**source.overrides, "memory.write.enabled": True}
        source = dataclasses.replace(source, overrides=overrides)
    if print_service:
        _print_service(source, host, port, allow_hosts, writable)
        return
    if not over_http:
        _refuse_http_options(host, port, allow_hosts)
        from apus.agents.server import serve

        serve(source)
        return
    from apus.agents.http_server import Binding
    from apus.agents.server import serve_http

    binding = Binding(host, port, allow_hosts)

    def ready(url: str) -> None:
        click.echo(f"Apus memory over MCP at {url} (Ctrl-C stops)", err=True)
        if not binding.loopback:
            from apus.agents.http_token import token_file

            click.echo(
                f"Clients send `Authorization: Bearer TOKEN`, the token in {token_file()}.",
                err=True,
            )

    serve_http(source, binding, on_ready=ready)


def _refuse_http_options(host: str, port: int, allow_hosts: tuple[str, ...]) -> None:
    if host != "127.0.0.1" or port != DEFAULT_PORT or allow_hosts:
        raise click.UsageError("--host, --port and --allow-host are for --http.")


def _print_token() -> None:
    from apus.agents.http_token import ensure_token, token_file

    token = ensure_token()
    click.echo(token)
    click.echo(
        f"(kept in {token_file()}, readable by you only; clients send "
        "`Authorization: Bearer TOKEN`)",
        err=True,
    )


def _print_service(
    source: SettingsSource, host: str, port: int, allow_hosts: tuple[str, ...], writable: bool
) -> None:
    from apus import paths
    from apus.agents.service import service_file, service_kind
    from apus.relaunch import own_command

    settings = source.load()
    command = [
        *own_command("apus.cli"),
        "--config",
        str(source.file),
        "--vault",
        str(settings.vault_path()),
        "mcp",
        "--http",
        "--host",
        host,
        "--port",
        str(port),
    ]
    for name in allow_hosts:
        command += ["--allow-host", name]
    if writable:
        command.append("--writable")
    log_file = str(paths.log_dir() / "mcp-http.log")
    click.echo(service_file(service_kind(sys.platform), command, log_file), nl=False)
