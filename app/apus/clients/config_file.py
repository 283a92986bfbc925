"""A client's config file, read once: its MCP servers, and its text with one entry changed.

JSON and JSONC through `apus.clients.jsonc` (only the entry's bytes change), TOML through
tomlkit (comments and layout kept). A file that does not parse is refused, never rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table

from apus.clients.catalog import Format
from apus.clients.jsonc import JsonDocument, JsonSyntaxError
from apus.errors import ApusError

_FORMAT_NAMES = {"json": "JSON", "jsonc": "JSON (comments allowed)", "toml": "TOML"}


class ClientConfigError(ApusError):
    """A client's config file cannot be read or changed safely; it is left as it is."""


def unreadable(path: Path, why: str) -> ClientConfigError:
    return ClientConfigError(
        f"{path} {why}, so Apus leaves it as it is.",
        fix="correct it where it says (or move the file aside), then run the same command again",
    )


class ServerTable:
    """The MCP servers of one config file (`key` at its top) and edits of one entry."""

    def __init__(self, path: Path, text: str | None, fmt: Format, key: str) -> None:
        """`text` None: the file does not exist yet. Raises ClientConfigError."""
        self.path, self.text, self.format, self.key = path, text, fmt, key
        self._json: JsonDocument | None = None
        self._toml: tomlkit.TOMLDocument | None = None
        source = text or ""
        if fmt == "toml":
            try:
                self._toml = tomlkit.parse(source)
            except TOMLKitError as exc:
                raise unreadable(path, f"is not valid TOML ({exc})") from None
            servers: Any = self._toml.get(key)
        else:
            try:
                self._json = JsonDocument(source, comments=fmt == "jsonc")
            except JsonSyntaxError as exc:
                raise unreadable(path, f"is not valid {_FORMAT_NAMES[fmt]} ({exc})") from None
            if not isinstance(self._json.data, dict):
                raise unreadable(path, "does not hold a JSON object")
            servers = self._json.get([key])
        if servers is not None and not isinstance(servers, dict):
            raise unreadable(path, f"has a `{key}` that is not a table of servers")
        self._servers: dict[str, Any] = dict(servers or {})

    @classmethod
    def read(cls, path: Path, fmt: Format, key: str) -> ServerTable:
        try:
            text: str | None = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = None
        except (OSError, UnicodeDecodeError) as exc:
            raise unreadable(path, f"cannot be read ({exc})") from None
        return cls(path, text, fmt, key)

    def servers(self) -> dict[str, Any]:
        """Name → entry, as plain values."""
        if self._toml is not None:
            return {name: _plain(entry) for name, entry in self._servers.items()}
        return dict(self._servers)

    def with_server(self, name: str, entry: dict[str, Any]) -> str:
        """The text with `name` set to `entry` (keys of an existing entry that `entry` does not
        name, such as a timeout the user added, are kept)."""
        if self._json is not None:
            existing = self._servers.get(name)
            if isinstance(existing, dict):
                return self._set_keys(name, existing, entry)
            return self._json.set([self.key, name], entry)
        assert self._toml is not None
        document = self._toml
        servers = document.get(self.key)
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            document[self.key] = servers
        current = servers.get(name)
        if isinstance(current, Table | InlineTable):
            for field, value in entry.items():
                current[field] = value
        elif isinstance(servers, InlineTable):  # `mcp_servers = { … }` on one line: stay in it
            servers[name] = tomlkit.inline_table()
            servers[name].update(entry)
        else:
            table = tomlkit.table()
            for field, value in entry.items():
                table[field] = value
            if list(document)[-1] != self.key:
                table.add(tomlkit.nl())  # a blank line before the table that follows
            servers[name] = table
        return tomlkit.dumps(document)

    def without_server(self, name: str) -> str:
        if self._json is not None:
            return self._json.remove([self.key, name])
        assert self._toml is not None
        document = self._toml
        servers = document.get(self.key)
        if servers is None or name not in servers:
            return self.text or ""
        del servers[name]
        if not servers and isinstance(servers, Table) and servers.is_super_table():
            del document[self.key]  # a header Apus's entry implied, not one the user wrote
        text = tomlkit.dumps(document)
        if text.endswith("\n\n") and not (self.text or "").endswith("\n\n"):
            # The blank line tomlkit put before a table added at the end stays behind it.
            text = text.rstrip("\n") + "\n"
        return text

    def _set_keys(self, name: str, existing: dict[str, Any], entry: dict[str, Any]) -> str:
        """Change only the fields that differ, each in place."""
        assert self._json is not None
        text = self.text or ""
        for field, value in entry.items():
            if existing.get(field) != value:
                document = JsonDocument(text, comments=self.format == "jsonc")
                text = document.set([self.key, name, field], value)
        return text


def same_entry(existing: Any, entry: dict[str, Any]) -> bool:
    """Whether an entry already says what `entry` says (an empty `env` equals none)."""
    if not isinstance(existing, dict):
        return False
    return all(
        existing.get(field, {} if value == {} else None) == value for field, value in entry.items()
    )


def _plain(value: Any) -> Any:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def entry_args(entry: Any) -> Sequence[str]:
    args = entry.get("args") if isinstance(entry, dict) else None
    return [str(arg) for arg in args] if isinstance(args, list) else []
