"""`apus connect [CLIENT]`: register this vault's MCP server with an agent client, or list them."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from apus.cli.context import current_source, guarded
from apus.clients.catalog import BY_NAME, CLIENTS, Places, claude_settings
from apus.terminal_text import terminal_safe

if TYPE_CHECKING:
    from apus.clients.catalog import Client, Scope
    from apus.clients.connect import Action, ClientState, Outcome


@click.command("connect")
@click.argument("client_name", metavar="[CLIENT]", required=False, type=click.Choice(list(BY_NAME)))
@click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default="user",
    show_default=True,
    help="user: every project of yours; project: this folder's own config (.mcp.json, "
    ".cursor/mcp.json, .vscode/mcp.json, .codex/config.toml, .gemini/settings.json).",
)
@click.option("--name", default="apus", show_default=True, help="The server's name in the client.")
@click.option(
    "--writable",
    is_flag=True,
    help="Let the agent write memory (the server runs `mcp --writable`).",
)
@click.option(
    "--url",
    metavar="URL",
    help="Reach a running `apus mcp --http` at URL (e.g. http://127.0.0.1:8765/mcp) instead "
    "of starting a server of its own; beyond loopback the bearer token goes with it.",
)
@click.option(
    "--hooks",
    is_flag=True,
    help="Claude Code: also recall trusted entries on every prompt and show USER.md's top "
    "entries at each session start (hooks in ~/.claude/settings.json). With --remove: take "
    "out only the hooks.",
)
@click.option("--remove", is_flag=True, help="Take Apus out of the client's config again.")
@click.option("--dry-run", is_flag=True, help="Print the change as a diff; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@guarded
def connect(
    client_name: str | None,
    scope: Scope,
    name: str,
    writable: bool,
    url: str | None,
    hooks: bool,
    remove: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Register this vault's MCP server with an agent client (claude-code, claude-desktop,
    cursor, vscode, codex, gemini-cli), in the client's own config file.

    It writes the absolute path of this `apus` and of the vault (or, with --url, the
    address of a server already running); a second run changes nothing; every other entry
    of the file is kept as it is, and the file as it was is kept beside it
    (`.apus-backup`). Without CLIENT: the clients found here, and whether each has Apus.
    """
    from apus.clients.config_file import ClientConfigError

    places = Places.current()
    if client_name is None:
        _list(places, scope, as_json)
        return
    client = BY_NAME[client_name]
    if hooks and client.name != "claude-code":
        raise ClientConfigError(
            "--hooks is for Claude Code only.", fix=f"run `apus connect {client.name}` without it"
        )
    entry = None if remove else _entry(client, writable, url)
    outcomes: list[Outcome] = []
    if not (remove and hooks):
        outcomes.append(_server(client, places, scope, name, entry, dry_run))
    if hooks or (remove and client.name == "claude-code"):
        taken = _hooks(client, places, remove, dry_run)
        if hooks or taken.action != "absent":  # `--remove` alone: hooks only when there were
            outcomes.append(taken)
    if as_json:
        click.echo(json.dumps({"dryRun": dry_run, "changes": [_as_json(o) for o in outcomes]}))
        return
    for outcome in outcomes:
        _show(outcome, dry_run)


def _server(
    client: Client,
    places: Places,
    scope: Scope,
    name: str,
    entry: dict[str, Any] | None,
    dry_run: bool,
) -> Outcome:
    from apus.clients.connect import connect as connect_client

    return connect_client(client, places, scope=scope, name=name, entry=entry, dry_run=dry_run)


def _entry(client: Client, writable: bool, url: str | None) -> dict[str, Any]:
    """What the client's config gets: the command that starts this vault's server, or the
    address of one already running (`--url`)."""
    from apus.clients.config_file import ClientConfigError

    if url is None:
        return client.entry(_launch("mcp", *(["--writable"] if writable else [])))
    if writable:
        raise ClientConfigError(
            "--writable is the server's to decide when the client reaches it by --url.",
            fix="start the server with `apus mcp --http --writable`, and connect without it",
        )
    address, headers = _served_at(url)
    entry = client.url_entry(address, headers)
    if entry is None:
        raise ClientConfigError(
            f"{client.label} starts its MCP servers itself and takes no URL in its config.",
            fix=f"run `apus connect {client.name}` without --url",
        )
    return entry


def _served_at(url: str) -> tuple[str, dict[str, str]]:
    """The URL checked, and the headers to send: the bearer token beyond loopback (the
    server refuses every call without it)."""
    from urllib.parse import urlsplit

    from apus.agents.http_server import is_loopback
    from apus.agents.http_token import read_token
    from apus.clients.config_file import ClientConfigError

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ClientConfigError(
            f"{url!r} is not the address of an `apus mcp --http` server.",
            fix="give the URL it printed when it started, e.g. --url http://127.0.0.1:8765/mcp",
        )
    if is_loopback(parts.hostname):
        return url, {}
    return url, {"Authorization": f"Bearer {read_token()}"}


def _hooks(client: Client, places: Places, remove: bool, dry_run: bool) -> Outcome:
    from apus.clients.claude_hooks import has_apus_hooks, plan_hooks
    from apus.clients.connect import Outcome, write

    command = None if remove else _launch("hook", "claude-code").shell()
    edit = plan_hooks(claude_settings(places), command)
    if not edit.changes:
        return Outcome(client, "absent" if remove else "unchanged", edit)
    action: Action = "added"
    if remove:
        action = "removed"
    elif has_apus_hooks(edit.before):
        action = "updated"
    return Outcome(client, action, edit, None if dry_run else write(edit))


def _launch(*subcommand: str) -> Any:
    from apus.clients.launch import apus_launch

    source = current_source()
    vault = source.load().vault_path()
    return apus_launch(*subcommand, vault=vault, config_file=source.config_file)


def _shown(path: Path) -> str:
    """A path under the home folder as `~/…`, the way people write it."""
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


_SAID = {
    "added": "added",
    "updated": "updated",
    "removed": "removed",
    "unchanged": "already there, unchanged",
    "absent": "not there, nothing to remove",
}


def _show(outcome: Outcome, dry_run: bool) -> None:
    client, edit = outcome.client, outcome.edit
    where = _shown(edit.path)
    hooks = client.name == "claude-code" and edit.path.name == "settings.json"
    what = "hooks" if hooks else "server"
    if dry_run:
        if edit.changes:
            click.echo(f"{client.label}: would change {where} ({what}):")
            for line in _redacted(edit.diff(), outcome.entry).splitlines():
                click.echo(terminal_safe(line))
        else:
            click.echo(f"{client.label}: {where} ({what}): {_SAID[outcome.action]}")
        return
    click.echo(f"{client.label}: {what} {_SAID[outcome.action]} in {where}")
    if hooks and outcome.action in ("added", "updated"):
        click.echo(terminal_safe(f"  runs:    {_launch('hook', 'claude-code').shell()}"))
        click.echo("  on:      UserPromptSubmit (trigger recall), SessionStart (USER.md)")
    if outcome.ran:
        click.echo(f"  through: claude mcp {' '.join(outcome.ran[2:5])} …")
    entry = outcome.entry
    if entry is not None and outcome.action in ("added", "updated"):
        if "command" in entry:
            runs = [str(entry["command"]), *entry.get("args", [])]
            click.echo(terminal_safe(f"  runs:    {shlex.join(runs)}"))
        else:  # a URL (its headers hold the token: never printed)
            address = entry.get("url") or entry.get("httpUrl")
            sent = " (with the bearer token)" if _secrets(entry) else ""
            click.echo(terminal_safe(f"  reaches: {address}{sent}"))
    if outcome.backup is not None:
        click.echo(f"  backup:  {_shown(outcome.backup)}")
    if outcome.action in ("added", "updated"):
        reload = "start a new Claude Code session" if hooks else client.reload
        click.echo(f"  next:    {reload}")


def _secrets(entry: dict[str, Any] | None) -> list[str]:
    """The header values of a URL entry (the bearer token), kept off the screen."""
    if entry is None:
        return []
    headers = entry.get("headers") or entry.get("http_headers") or {}
    return [str(value) for value in headers.values()]


def _redacted(diff: str, entry: dict[str, Any] | None) -> str:
    for secret in _secrets(entry):
        diff = diff.replace(secret, "Bearer …")
    return diff


def _as_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "client": outcome.client.name,
        "action": outcome.action,
        "path": str(outcome.edit.path),
        "backup": str(outcome.backup) if outcome.backup else None,
        "diff": _redacted(outcome.edit.diff(), outcome.entry),
        "through": list(outcome.ran) or None,
    }


def _list(places: Places, scope: Scope, as_json: bool) -> None:
    from apus.clients.connect import entry_vault, survey

    states = survey(places, scope)
    if as_json:
        click.echo(json.dumps({"clients": [_state_json(state) for state in states]}))
        return
    width = max(len(client.name) for client in CLIENTS)
    for state in states:
        click.echo(f"{state.client.name:<{width}}  {_state_text(state, entry_vault)}")
    if not any(state.entries for state in states):
        click.echo("\nConnect one: apus connect CLIENT  (--dry-run shows the change first)")


def _state_text(state: ClientState, entry_vault: Any) -> str:
    where = _shown(state.path)
    if state.problem:
        return f"cannot read {where}: {terminal_safe(state.problem)}"
    if state.entries:
        names = ", ".join(
            f"{name} (vault {entry_vault(entry) or '?'})" for name, entry in state.entries.items()
        )
        return terminal_safe(f"connected: {names} in {where}")
    if state.found:
        return f"found, not connected ({where})"
    return "not found"


def _state_json(state: ClientState) -> dict[str, Any]:
    from apus.clients.connect import entry_vault

    return {
        "client": state.client.name,
        "label": state.client.label,
        "found": state.found,
        "path": str(state.path),
        "connected": bool(state.entries),
        "servers": [
            {"name": name, "vault": entry_vault(entry), "command": entry.get("command")}
            for name, entry in state.entries.items()
        ],
        "problem": state.problem or None,
    }
