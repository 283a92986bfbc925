"""The clients Apus connects to: where each keeps its MCP servers, in which format, and the
entry it reads, as each client's documentation gives them.

- Claude Code: `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`), top-level `mcpServers`
  for the user scope; `.mcp.json` in the project for the project scope. Strict JSON.
- Claude Desktop: `claude_desktop_config.json` in `~/Library/Application Support/Claude`
  (macOS), `%APPDATA%\\Claude` (Windows), `$XDG_CONFIG_HOME/Claude` (Linux). Strict JSON.
- Cursor: `~/.cursor/mcp.json`, or `.cursor/mcp.json` in the project; `mcpServers`. Strict JSON.
- VS Code: `mcp.json` in the user profile (`Code/User` in the same folders as Claude
  Desktop's), or `.vscode/mcp.json`; `servers`, entries with `"type": "stdio"`. JSONC.
- Codex: `$CODEX_HOME/config.toml` (`~/.codex/config.toml`), or `.codex/config.toml` in a
  trusted project; `[mcp_servers.<name>]` tables. TOML.
- Gemini CLI: `~/.gemini/settings.json`, or `.gemini/settings.json`; `mcpServers`. JSONC (it
  strips comments when it reads the file).

Each client's entry shape is one function of the launch, and for the clients that reach a
server by URL (`apus mcp --http`) one function of the URL and the headers to send: Claude
Code, VS Code (`"type": "http"`), Cursor (`url`), Codex (`url`, `http_headers`), Gemini CLI
(`httpUrl`). Claude Desktop starts its servers itself and takes no URL in its file.
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from apus import paths
from apus.clients.launch import Launch

Scope = Literal["user", "project"]
Format = Literal["json", "jsonc", "toml"]


@dataclass(frozen=True)
class Places:
    """Where clients keep their files: the home folder, the environment, the system and the
    project folder (a project scope's files); tests hand in their own."""

    home: Path
    env: Mapping[str, str]
    system: str
    project: Path

    @classmethod
    def current(cls) -> Places:
        return cls(Path.home(), dict(os.environ), platform.system(), Path.cwd())

    def app_config(self) -> Path:
        """The folder desktop applications keep their settings in, on this system."""
        if self.system == "Darwin":
            return self.home / "Library" / "Application Support"
        if self.system == "Windows":
            return Path(self.env.get("APPDATA") or self.home / "AppData" / "Roaming")
        return Path(self.env.get("XDG_CONFIG_HOME") or self.home / ".config")

    def claude_dir(self) -> Path:
        """Claude Code's folder (settings.json, and with CLAUDE_CONFIG_DIR its .claude.json)."""
        return paths.claude_code_dir(self.home, self.env)

    def codex_home(self) -> Path:
        return paths.codex_home(self.home, self.env)

    def which(self, program: str) -> str | None:
        return shutil.which(program, path=self.env.get("PATH", os.defpath))


@dataclass(frozen=True)
class Client:
    """One agent client: its config file per scope, the format, and the entry it reads."""

    name: str
    label: str
    format: Format
    servers_key: str  # the table of MCP servers in that file
    program: str | None  # its command, when it has one on PATH
    scopes: tuple[Scope, ...]
    locate: Callable[[Places, Scope], Path]
    installed_in: Callable[[Places], Path]  # a folder that exists once the client has run
    shape: Callable[[Launch], dict[str, Any]]
    reload: str  # what makes the client read the change
    # The entry for a server reached by URL, with the headers to send; None: no URL form.
    url_shape: Callable[[str, Mapping[str, str]], dict[str, Any]] | None = None

    def config_path(self, places: Places, scope: Scope) -> Path:
        return self.locate(places, scope)

    def entry(self, launch: Launch) -> dict[str, Any]:
        return self.shape(launch)

    def url_entry(self, url: str, headers: Mapping[str, str]) -> dict[str, Any] | None:
        """The entry that reaches a running `apus mcp --http` at `url`; None when this
        client takes no URL."""
        return None if self.url_shape is None else self.url_shape(url, headers)

    def found(self, places: Places) -> bool:
        if self.installed_in(places).is_dir():
            return True
        return self.program is not None and places.which(self.program) is not None


def _plain(launch: Launch) -> dict[str, Any]:
    return {"command": launch.command, "args": list(launch.args)}


def _typed(launch: Launch) -> dict[str, Any]:
    return {"type": "stdio", **_plain(launch)}


def _claude_code(launch: Launch) -> dict[str, Any]:
    # The shape `claude mcp add-json` stores.
    return {**_typed(launch), "env": {}}


def _url_shape(
    key: str, *, typed: bool = False, headers_key: str = "headers"
) -> Callable[[str, Mapping[str, str]], dict[str, Any]]:
    """An entry naming the URL under `key` (and `"type": "http"` when `typed`), with the
    headers to send under `headers_key` when there are any."""

    def shape(url: str, headers: Mapping[str, str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "http"} if typed else {}
        entry[key] = url
        if headers:
            entry[headers_key] = dict(headers)
        return entry

    return shape


def _claude_code_file(places: Places, scope: Scope) -> Path:
    if scope == "project":
        return places.project / ".mcp.json"
    if places.env.get("CLAUDE_CONFIG_DIR"):
        return places.claude_dir() / ".claude.json"
    return places.home / ".claude.json"


def _per_scope(user: Callable[[Places], Path], project: str) -> Callable[[Places, Scope], Path]:
    def locate(places: Places, scope: Scope) -> Path:
        return places.project / project if scope == "project" else user(places)

    return locate


CLIENTS: tuple[Client, ...] = (
    Client(
        name="claude-code",
        label="Claude Code",
        format="json",
        servers_key="mcpServers",
        program="claude",
        scopes=("user", "project"),
        locate=_claude_code_file,
        installed_in=Places.claude_dir,
        shape=_claude_code,
        reload="start a new Claude Code session (`claude mcp list` shows it)",
        url_shape=_url_shape("url", typed=True),
    ),
    Client(
        name="claude-desktop",
        label="Claude Desktop",
        format="json",
        servers_key="mcpServers",
        program=None,
        scopes=("user",),
        locate=lambda places, _scope: places.app_config() / "Claude" / "claude_desktop_config.json",
        installed_in=lambda places: places.app_config() / "Claude",
        shape=_plain,
        reload="quit and reopen Claude Desktop",
    ),
    Client(
        name="cursor",
        label="Cursor",
        format="json",
        servers_key="mcpServers",
        program="cursor",
        scopes=("user", "project"),
        locate=_per_scope(lambda places: places.home / ".cursor" / "mcp.json", ".cursor/mcp.json"),
        installed_in=lambda places: places.home / ".cursor",
        shape=_plain,
        reload="Cursor picks it up (Settings → MCP lists it)",
        url_shape=_url_shape("url"),
    ),
    Client(
        name="vscode",
        label="VS Code",
        format="jsonc",
        servers_key="servers",
        program="code",
        scopes=("user", "project"),
        locate=_per_scope(
            lambda places: places.app_config() / "Code" / "User" / "mcp.json", ".vscode/mcp.json"
        ),
        installed_in=lambda places: places.app_config() / "Code",
        shape=_typed,
        reload="VS Code picks it up (MCP: List Servers shows it)",
        url_shape=_url_shape("url", typed=True),
    ),
    Client(
        name="codex",
        label="Codex",
        format="toml",
        servers_key="mcp_servers",
        program="codex",
        scopes=("user", "project"),
        locate=_per_scope(lambda places: places.codex_home() / "config.toml", ".codex/config.toml"),
        installed_in=Places.codex_home,
        shape=_plain,
        reload="start a new Codex session (`codex mcp list` shows it)",
        url_shape=_url_shape("url", headers_key="http_headers"),
    ),
    Client(
        name="gemini-cli",
        label="Gemini CLI",
        format="jsonc",
        servers_key="mcpServers",
        program="gemini",
        scopes=("user", "project"),
        locate=_per_scope(
            lambda places: places.home / ".gemini" / "settings.json", ".gemini/settings.json"
        ),
        installed_in=lambda places: places.home / ".gemini",
        shape=_plain,
        reload="start a new Gemini CLI session (`gemini mcp list` shows it)",
        url_shape=_url_shape("httpUrl"),
    ),
)

BY_NAME: dict[str, Client] = {client.name: client for client in CLIENTS}


def claude_settings(places: Places) -> Path:
    """Claude Code's user settings, where hooks live."""
    return places.claude_dir() / "settings.json"
