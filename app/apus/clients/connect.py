"""`apus connect`: register (or remove) this vault's MCP server in a client's own config file.

Every change is planned first (`Edit`: the file's text before and after, which `--dry-run`
prints as a diff), then written: the file as it was is copied beside it, the new text goes to
a temporary file in the same folder and replaces the old one in one step, and a file that is
read-only, or changed by someone else meanwhile, is left alone. Claude Code's own file is
changed through `claude mcp add-json` when `claude` is on PATH, since the running client
rewrites that file too.
"""

from __future__ import annotations

import difflib
import json
import os
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from apus.clients.catalog import CLIENTS, Client, Places, Scope
from apus.clients.config_file import ClientConfigError, ServerTable, entry_args, same_entry
from apus.clients.launch import runs_apus, vault_of

Action = Literal["added", "updated", "removed", "unchanged", "absent"]
BACKUP_SUFFIX = ".apus-backup"
# Names every client accepts as a key and Codex as a TOML table name without quoting.
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@dataclass(frozen=True)
class Edit:
    """One file's change: its text before (None: no file yet) and after."""

    path: Path
    before: str | None
    after: str

    @property
    def changes(self) -> bool:
        return self.after != (self.before or "")

    def diff(self) -> str:
        before = (self.before or "").splitlines(keepends=True)
        after = self.after.splitlines(keepends=True)
        label = str(self.path)
        lines = difflib.unified_diff(
            before, after, f"{label} (now)" if self.before is not None else "/dev/null", label
        )
        return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


@dataclass(frozen=True)
class Outcome:
    """What `connect` did (or, with `dry_run`, would do) to one client."""

    client: Client
    action: Action
    edit: Edit
    backup: Path | None = None
    ran: tuple[str, ...] = ()  # the client's own command, when it made the change
    entry: dict[str, Any] | None = None  # what the client now runs (None: removed)


@dataclass(frozen=True)
class ClientState:
    """A client as `apus connect` alone lists it."""

    client: Client
    found: bool
    path: Path
    entries: dict[str, Any]  # the entries that start some Apus, by name
    problem: str = ""  # why the file could not be read


def check_name(name: str) -> None:
    if not name or not set(name) <= _NAME_CHARS:
        raise ClientConfigError(
            f"{name!r} cannot name an MCP server in every client.",
            fix="use --name with letters, digits, '-' and '_' only (the default is apus)",
        )


def survey(places: Places, scope: Scope = "user") -> list[ClientState]:
    """Each client: whether it is installed here, its config file, and its Apus entries."""
    states = []
    for client in CLIENTS:
        chosen: Scope = scope if scope in client.scopes else "user"
        path = client.config_path(places, chosen)
        try:
            servers = ServerTable.read(path, client.format, client.servers_key).servers()
        except ClientConfigError as exc:
            states.append(ClientState(client, client.found(places), path, {}, exc.reason))
            continue
        ours = {name: entry for name, entry in servers.items() if starts_apus(entry)}
        states.append(ClientState(client, client.found(places) or bool(ours), path, ours))
    return states


def starts_apus(entry: Any) -> bool:
    """Whether the entry starts some Apus (an entry naming a URL is listed by `apus connect`
    only when it was made so: nothing in a URL says what serves it)."""
    return isinstance(entry, dict) and runs_apus(str(entry.get("command", "")), entry_args(entry))


def entry_vault(entry: Any) -> str | None:
    return vault_of(entry_args(entry))


def connect(
    client: Client,
    places: Places,
    *,
    scope: Scope,
    name: str,
    entry: dict[str, Any] | None,
    dry_run: bool = False,
) -> Outcome:
    """Add or update `name` (entry None: remove it) in the client's config for `scope`."""
    check_name(name)
    if scope not in client.scopes:
        raise ClientConfigError(
            f"{client.label} has no {scope} configuration.",
            fix=f"run it with --scope {client.scopes[0]}",
        )
    path = client.config_path(places, scope)
    table = ServerTable.read(path, client.format, client.servers_key)
    existing = table.servers().get(name)
    action: Action
    if entry is None:
        action = "absent" if name not in table.servers() else "removed"
        after = table.without_server(name) if action == "removed" else table.text or ""
    elif same_entry(existing, entry):
        action, after = "unchanged", table.text or ""
    else:
        action = "updated" if existing is not None else "added"
        target = table
        if _other_transport(existing, entry):  # nothing of the old way to start it stays
            target = ServerTable(path, table.without_server(name), client.format, table.key)
        after = target.with_server(name, entry)
    edit = Edit(path, table.text, after)
    if dry_run or action in ("unchanged", "absent"):
        return Outcome(client, action, edit, entry=entry)
    claude = places.which("claude") if client.name == "claude-code" else None
    if claude is not None:
        _check_writable(path)
        backup = _backup(edit)
        ran = _through_claude(claude, places, scope, name, entry, replace=existing is not None)
        _verify(client, path, name, entry)
        return Outcome(client, action, edit, backup, ran, entry)
    return Outcome(client, action, edit, write(edit), entry=entry)


def _other_transport(existing: Any, entry: dict[str, Any]) -> bool:
    """Whether an entry that starts a command becomes one that names a URL, or back."""
    return isinstance(existing, dict) and ("command" in existing) != ("command" in entry)


def write(edit: Edit) -> Path | None:
    """Write the edit (a backup of the old text first); None when there was no file before."""
    target = _real(edit.path)
    _check_writable(edit.path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        backup = _backup(edit)
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o600
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
        try:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
                out.write(edit.after)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(temporary, mode)
            if _current(target) != edit.before:
                raise ClientConfigError(
                    f"{edit.path} changed while Apus was editing it, so Apus left it as it is.",
                    fix="run the same command again",
                )
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ClientConfigError(
            f"Could not write {edit.path}: {exc.strerror or exc}.",
            fix="check that its folder is yours and writable, then run the same command again",
        ) from None
    return backup


def _check_writable(path: Path) -> None:
    """A file without any write bit is refused even for an administrator who could write it:
    it says its owner wants it left alone."""
    target = _real(path)
    if not target.exists():
        return
    writable_bits = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    if target.stat().st_mode & writable_bits and os.access(target, os.W_OK):
        return
    raise ClientConfigError(
        f"{path} is read-only, so Apus leaves it as it is.",
        fix=f"make it writable (chmod u+w {path}) and run the same command again, "
        "or make the change `--dry-run` prints by hand",
    )


def _real(path: Path) -> Path:
    """The file a link points to: a settings file kept in a dotfiles folder stays a link."""
    return path.resolve() if path.is_symlink() else path


def _current(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _backup(edit: Edit) -> Path | None:
    """The file as it was, beside it (replaced at each change Apus makes)."""
    if edit.before is None:
        return None
    target = _real(edit.path)
    backup = target.with_name(target.name + BACKUP_SUFFIX)
    backup.write_text(edit.before, encoding="utf-8", newline="")
    os.chmod(backup, stat.S_IMODE(target.stat().st_mode))
    return backup


def _through_claude(
    claude: str,
    places: Places,
    scope: Scope,
    name: str,
    entry: dict[str, Any] | None,
    *,
    replace: bool,
) -> tuple[str, ...]:
    """Let `claude mcp` make the change (it refuses to add a name that exists: remove first)."""
    commands: list[list[str]] = []
    if entry is None or replace:
        commands.append([claude, "mcp", "remove", "--scope", scope, name])
    if entry is not None:
        commands.append([claude, "mcp", "add-json", "--scope", scope, name, json.dumps(entry)])
    for command in commands:
        try:
            done = subprocess.run(
                command,
                cwd=places.project,
                env=dict(places.env),
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _claude_failed(command, str(exc)) from None
        if done.returncode != 0:
            raise _claude_failed(command, (done.stderr or done.stdout).strip())
    return tuple(commands[-1])


def _claude_failed(command: list[str], said: str) -> ClientConfigError:
    return ClientConfigError(
        f"`claude {' '.join(command[1:4])}` failed: {said[-500:] or 'no message'}.",
        fix="run `claude mcp list` to see what Claude Code says about its configuration, or "
        "take `claude` off PATH for this command and Apus edits the file itself",
    )


def _verify(client: Client, path: Path, name: str, entry: dict[str, Any] | None) -> None:
    servers = ServerTable.read(path, client.format, client.servers_key).servers()
    done = name not in servers if entry is None else same_entry(servers.get(name), entry)
    if not done:
        raise ClientConfigError(
            f"`claude mcp` succeeded but {path} does not show the change.",
            fix="run `claude mcp list`; a newer Claude Code may keep its servers elsewhere",
        )
