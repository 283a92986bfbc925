"""`apus connect` on each client's real file format, through the real CLI in a private home:
other servers, comments and unknown keys survive byte for byte; twice changes nothing;
`--remove` gives the file back; a broken or read-only file is refused and left as it was."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from apus.clients import launch
from apus.clients.launch import apus_launch, own_executable
from support.vaults import APUS, run_apus


@dataclass(frozen=True)
class Home:
    """A private home folder, an empty PATH (no real client is run) and a vault."""

    root: Path
    vault: Path
    bin: Path
    env: dict[str, str]

    def run(self, *args: str, expect: int | None = 0, cwd: Path | None = None) -> Any:
        if cwd is None:
            return run_apus("--vault", self.vault, *args, env=self.env, expect=expect)
        return subprocess.run(
            [*APUS, "--vault", str(self.vault), *args],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
        )


@pytest.fixture
def home(tmp_path: Path) -> Home:
    root = tmp_path / "home"
    root.mkdir()
    vault = tmp_path / "notes"
    vault.mkdir()
    (vault / "MEMORY.md").write_text("# Memory\n", encoding="utf-8")
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "APPDATA")
    }
    env.update(HOME=str(root), PATH=str(empty_bin), APUS_MEMORY__SEARCH__PROVIDER="none")
    return Home(root, vault, empty_bin, env)


CLAUDE_JSON = """{
  "numStartups": 41,
  "projects": {
    "/home/me/site": {
      "allowedTools": [],
      "mcpServers": {}
    }
  },
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_TOKEN": "x"}
    }
  },
  "tipsHistory": {"new-user-warmup": 3}
}
"""

DESKTOP_JSON = """{
  "globalShortcut": "Alt+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop"]
    }
  }
}
"""

CURSOR_JSON = '{"mcpServers": {"linear": {"url": "https://mcp.linear.app/sse"}}}\n'

VSCODE_JSONC = """{
  // Work servers
  "servers": {
    "playwright": {
      "type": "stdio",
      "command": "npx",
      "args": ["@playwright/mcp@latest"], // pinned later
    },
  },
  "inputs": [
    {"type": "promptString", "id": "token", "password": true}
  ]
}
"""

CODEX_TOML = """# Codex settings
model = "gpt-5-codex"  # the default for this machine
approval_policy = "on-request"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
startup_timeout_sec = 20  # slow network

[projects."/home/me/site"]
trust_level = "trusted"
"""

GEMINI_JSONC = """{
  /* Gemini CLI settings */
  "theme": "GitHub",
  "mcpServers": {
    "weather": {"command": "node", "args": ["weather.js"], "trust": false}
  },
  "selectedAuthType": "gemini-api-key"
}
"""


@dataclass(frozen=True)
class Case:
    client: str
    path: str  # under the home folder
    text: str
    servers: tuple[str, ...]  # where the entries are


CASES = [
    Case("claude-code", ".claude.json", CLAUDE_JSON, ("mcpServers",)),
    Case(
        "claude-desktop",
        "xdg_config_home/Claude/claude_desktop_config.json",
        DESKTOP_JSON,
        ("mcpServers",),
    ),
    Case("cursor", ".cursor/mcp.json", CURSOR_JSON, ("mcpServers",)),
    Case("vscode", "xdg_config_home/Code/User/mcp.json", VSCODE_JSONC, ("servers",)),
    Case("codex", ".codex/config.toml", CODEX_TOML, ("mcp_servers",)),
    Case("gemini-cli", ".gemini/settings.json", GEMINI_JSONC, ("mcpServers",)),
]


def config_path(home: Home, case: Case) -> Path:
    if case.path.startswith("xdg_config_home/"):
        return Path(home.env["XDG_CONFIG_HOME"]) / case.path.removeprefix("xdg_config_home/")
    return home.root / case.path


def read_config(path: Path, client: str) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    if client == "codex":
        return tomllib.loads(text)
    from apus.clients.jsonc import JsonDocument

    data = JsonDocument(text, comments=client in ("vscode", "gemini-cli")).data
    assert isinstance(data, dict)
    return data


def entries(path: Path, case: Case) -> dict[str, Any]:
    data: Any = read_config(path, case.client)
    for key in case.servers:
        data = data[key]
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("case", CASES, ids=[case.client for case in CASES])
def test_connect_keeps_the_file_and_undoes_itself(home: Home, case: Case) -> None:
    path = config_path(home, case)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(case.text, encoding="utf-8")
    others = entries(path, case)

    first = home.run("connect", case.client)
    assert "added" in first.stdout
    servers = entries(path, case)
    apus = servers.pop("apus")
    assert servers == others  # every other server as it was
    assert apus["args"][-3:] == ["--vault", str(home.vault), "mcp"]
    assert apus["args"][:-3] == own_executable()[1:]  # `-m apus` from a test interpreter
    assert apus["command"] == sys.executable
    if case.client in ("claude-code", "vscode"):
        assert apus["type"] == "stdio"
    backup = path.with_name(path.name + ".apus-backup")
    assert backup.read_text(encoding="utf-8") == case.text

    changed = path.read_bytes()
    second = home.run("connect", case.client)
    assert "unchanged" in second.stdout
    assert path.read_bytes() == changed
    assert backup.read_text(encoding="utf-8") == case.text

    removed = home.run("connect", case.client, "--remove")
    assert "removed" in removed.stdout
    assert path.read_text(encoding="utf-8") == case.text  # byte for byte
    assert "not there" in home.run("connect", case.client, "--remove").stdout


def test_the_other_keys_of_the_file_stay_byte_for_byte(home: Home) -> None:
    """What changes is the entry and the comma before it: nothing else of the file."""
    path = home.root / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(GEMINI_JSONC, encoding="utf-8")
    home.run("connect", "gemini-cli")
    after = path.read_text(encoding="utf-8")
    head, tail = GEMINI_JSONC.split('"trust": false}', 1)
    assert after.startswith(head + '"trust": false},\n    "apus": {')
    assert after.endswith("\n  },\n" + tail.split("\n  },\n", 1)[1])


def test_a_new_file_is_made_private_in_a_new_folder(home: Home) -> None:
    home.run("connect", "cursor")
    path = home.root / ".cursor" / "mcp.json"
    assert entries(path, CASES[2])["apus"]["args"][-1] == "mcp"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not path.with_name("mcp.json.apus-backup").exists()  # nothing to back up


def test_writable_name_and_project_scope(home: Home, tmp_path: Path) -> None:
    project = tmp_path / "site"
    project.mkdir()
    result = home.run(
        "connect", "claude-code", "--scope", "project", "--name", "notes", "--writable", cwd=project
    )
    assert result.returncode == 0, result.stderr
    servers = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert servers["notes"]["args"][-2:] == ["mcp", "--writable"]
    assert not (home.root / ".claude.json").exists()
    refused = home.run("connect", "claude-desktop", "--scope", "project", expect=1)
    assert "has no project configuration" in refused.stderr
    bad_name = home.run("connect", "codex", "--name", "my server", expect=1)
    assert "Fix:" in bad_name.stderr


def test_a_config_flag_travels_with_the_entry(home: Home, tmp_path: Path) -> None:
    config = tmp_path / "work.toml"
    config.write_text("", encoding="utf-8")
    run_apus("--vault", home.vault, "--config", config, "connect", "codex", env=home.env)
    args = entries(home.root / ".codex" / "config.toml", CASES[4])["apus"]["args"]
    assert args[-5:] == ["--vault", str(home.vault), "--config", str(config), "mcp"]


def test_dry_run_prints_the_change_and_writes_nothing(home: Home) -> None:
    path = home.root / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX_TOML, encoding="utf-8")
    result = home.run("connect", "codex", "--dry-run")
    assert "+[mcp_servers.apus]" in result.stdout
    assert f'+args = ["-m", "apus", "--vault", "{home.vault}", "mcp"]' in result.stdout
    assert path.read_text(encoding="utf-8") == CODEX_TOML
    assert not path.with_name("config.toml.apus-backup").exists()
    as_json = json.loads(home.run("connect", "codex", "--dry-run", "--json").stdout)
    assert as_json["dryRun"] is True
    assert as_json["changes"][0]["action"] == "added"


@pytest.mark.parametrize(
    ("case", "broken"),
    [
        (CASES[0], '{\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}\n'),
        (CASES[2], '{"mcpServers": {"a": 1} // note\n}'),
        (CASES[3], '{\n  "servers": {\n    "a": {\n}\n'),
        (CASES[4], '[mcp_servers.a]\ncommand = "x"\ncommand = "y"\n'),
        (CASES[5], '{"mcpServers": ["not", "a", "table"]}'),
    ],
    ids=["json-trailing-comma", "json-comment", "jsonc-unclosed", "toml-duplicate", "not-a-table"],
)
def test_a_file_that_does_not_parse_is_refused_and_left_alone(
    home: Home, case: Case, broken: str
) -> None:
    path = config_path(home, case)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(broken, encoding="utf-8")
    result = home.run("connect", case.client, expect=1)
    assert str(path) in result.stderr
    assert "leaves it as it is" in result.stderr
    assert "Fix: correct it" in result.stderr
    assert path.read_text(encoding="utf-8") == broken
    assert not path.with_name(path.name + ".apus-backup").exists()
    listed = home.run("connect")
    assert f"{case.client}" in listed.stdout and "cannot read" in listed.stdout


def test_a_read_only_file_is_refused(home: Home) -> None:
    path = home.root / ".gemini" / "settings.json"
    path.parent.mkdir()
    path.write_text(GEMINI_JSONC, encoding="utf-8")
    path.chmod(0o444)
    result = home.run("connect", "gemini-cli", expect=1)
    assert f"{path} is read-only" in result.stderr
    assert f"Fix: make it writable (chmod u+w {path})" in result.stderr
    assert path.read_text(encoding="utf-8") == GEMINI_JSONC
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


def test_a_linked_config_stays_a_link(home: Home, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "mcp.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text(CURSOR_JSON, encoding="utf-8")
    link = home.root / ".cursor" / "mcp.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    home.run("connect", "cursor")
    assert link.is_symlink()
    assert "apus" in json.loads(dotfiles.read_text(encoding="utf-8"))["mcpServers"]
    assert dotfiles.with_name("mcp.json.apus-backup").read_text(encoding="utf-8") == CURSOR_JSON


def test_connect_alone_lists_the_clients_and_their_apus(home: Home) -> None:
    (home.root / ".codex").mkdir()
    (home.root / ".cursor").mkdir()
    before = home.run("connect").stdout
    assert "codex           found, not connected (~/.codex/config.toml)" in before
    assert "gemini-cli      not found" in before
    home.run("connect", "codex")
    after = json.loads(home.run("connect", "--json").stdout)
    codex = next(state for state in after["clients"] if state["client"] == "codex")
    assert codex["connected"] is True
    assert codex["servers"] == [
        {"name": "apus", "vault": str(home.vault), "command": sys.executable}
    ]
    cursor = next(state for state in after["clients"] if state["client"] == "cursor")
    assert (cursor["found"], cursor["connected"]) == (True, False)


FAKE_CLAUDE = """#!{python}
# Stands in for `claude mcp add-json/remove` (the real one: tests/support/real_clients.py):
# records its arguments and changes ~/.claude.json as Claude Code does.
import json, os, sys
from pathlib import Path
Path(os.environ["HOME"], "claude-calls.txt").open("a").write(json.dumps(sys.argv[1:]) + "\\n")
path = Path(os.environ["HOME"], ".claude.json")
data = json.loads(path.read_text()) if path.exists() else {{}}
servers = data.setdefault("mcpServers", {{}})
if sys.argv[2] == "add-json":
    if sys.argv[5] in servers:
        sys.exit("MCP server " + sys.argv[5] + " already exists in user config")
    servers[sys.argv[5]] = json.loads(sys.argv[6])
elif sys.argv[2] == "remove":
    if sys.argv[5] not in servers:
        sys.exit("No MCP server found")
    del servers[sys.argv[5]]
path.write_text(json.dumps(data, indent=2))
"""


def test_claude_on_path_makes_the_change_itself(home: Home) -> None:
    claude = home.bin / "claude"
    claude.write_text(FAKE_CLAUDE.format(python=sys.executable), encoding="utf-8")
    claude.chmod(0o755)
    (home.root / ".claude.json").write_text(CLAUDE_JSON, encoding="utf-8")
    result = home.run("connect", "claude-code")
    assert "through: claude mcp add-json" in result.stdout
    calls = [json.loads(line) for line in (home.root / "claude-calls.txt").read_text().splitlines()]
    assert calls[0][:5] == ["mcp", "add-json", "--scope", "user", "apus"]
    assert json.loads(calls[0][5])["args"][-1] == "mcp"
    backup = home.root / ".claude.json.apus-backup"
    assert backup.read_text(encoding="utf-8") == CLAUDE_JSON
    assert "unchanged" in home.run("connect", "claude-code").stdout
    assert len((home.root / "claude-calls.txt").read_text().splitlines()) == 1
    home.run("connect", "claude-code", "--writable")  # a changed entry: removed, added again
    calls = [json.loads(line) for line in (home.root / "claude-calls.txt").read_text().splitlines()]
    assert [call[1] for call in calls[1:]] == ["remove", "add-json"]


def test_the_packaged_binary_names_itself(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PyInstaller binary reports its own path as sys.executable (a one-file binary: the
    file, not its unpack folder): that path is what clients run."""
    binary = tmp_path / "dist" / "apus-linux-x86_64"
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(binary))
    assert own_executable() == [str(binary)]
    launched = apus_launch("mcp", vault=tmp_path / "notes")
    assert (launched.command, launched.args) == (
        str(binary),
        ("--vault", str(tmp_path / "notes"), "mcp"),
    )


def test_an_installed_script_names_itself_unresolved(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A pipx link is kept as the link, so the entry survives an upgrade of its target."""
    target = tmp_path / "venv" / "bin" / "apus"
    target.parent.mkdir(parents=True)
    target.write_text("#!/bin/sh\n", encoding="utf-8")
    link = tmp_path / "local-bin" / "apus"
    link.parent.mkdir()
    link.symlink_to(target)
    monkeypatch.setattr(sys, "argv", [str(link), "connect", "codex"])
    assert launch.own_executable() == [str(link)]
    monkeypatch.setattr(sys, "argv", ["/somewhere/apus/__main__.py", "connect"])
    assert launch.own_executable() == [str(Path(sys.executable).absolute()), "-m", "apus"]


def test_servers_written_inline_in_toml_stay_inline(home: Home) -> None:
    path = home.root / ".codex" / "config.toml"
    path.parent.mkdir()
    text = 'mcp_servers = { context7 = { command = "npx" } }\n'
    path.write_text(text, encoding="utf-8")
    home.run("connect", "codex")
    after = path.read_text(encoding="utf-8")
    assert after.count("\n") == 1
    assert tomllib.loads(after)["mcp_servers"]["apus"]["args"][-1] == "mcp"
    home.run("connect", "codex", "--remove")
    assert path.read_text(encoding="utf-8") == text


URL = "http://127.0.0.1:8765/mcp"
# Where each client that reaches a server by URL keeps it, and what its entry holds then.
URL_ENTRIES = {
    "claude-code": {"type": "http", "url": URL},
    "cursor": {"url": URL},
    "vscode": {"type": "http", "url": URL},
    "codex": {"url": URL},
    "gemini-cli": {"httpUrl": URL},
}


@pytest.mark.parametrize("client", list(URL_ENTRIES))
def test_a_url_replaces_the_command_and_back(home: Home, client: str) -> None:
    case = next(case for case in CASES if case.client == client)
    path = config_path(home, case)
    home.run("connect", client)
    assert "command" in entries(path, case)["apus"]

    reached = home.run("connect", client, "--url", URL)
    assert f"reaches: {URL}" in reached.stdout
    assert entries(path, case)["apus"] == URL_ENTRIES[client]  # nothing of the command left
    assert "unchanged" in home.run("connect", client, "--url", URL).stdout

    home.run("connect", client)
    started = entries(path, case)["apus"]
    assert started["args"][-1] == "mcp"
    assert "url" not in started and "httpUrl" not in started


def test_a_url_beyond_loopback_carries_the_token_and_never_shows_it(home: Home) -> None:
    url = "http://notes.example:8765/mcp"
    refused = home.run("connect", "cursor", "--url", url, expect=1)
    assert "none has been made" in refused.stderr
    assert "Fix: apus mcp --token" in refused.stderr
    assert not (home.root / ".cursor" / "mcp.json").exists()

    token = home.run("mcp", "--token").stdout.strip().splitlines()[-1].strip()
    assert len(token) >= 32
    shown = home.run("connect", "cursor", "--url", url, "--dry-run")
    assert "Bearer …" in shown.stdout and token not in shown.stdout
    as_json = home.run("connect", "cursor", "--url", url, "--dry-run", "--json")
    assert token not in as_json.stdout
    done = home.run("connect", "cursor", "--url", url)
    assert token not in done.stdout
    entry = entries(home.root / ".cursor" / "mcp.json", CASES[2])["apus"]
    assert entry == {"url": url, "headers": {"Authorization": f"Bearer {token}"}}


def test_what_a_url_cannot_do_is_refused_with_the_fix(home: Home) -> None:
    desktop = home.run("connect", "claude-desktop", "--url", URL, expect=1)
    assert "takes no URL" in desktop.stderr and "Fix:" in desktop.stderr
    writable = home.run("connect", "codex", "--url", URL, "--writable", expect=1)
    assert "apus mcp --http --writable" in writable.stderr
    not_a_url = home.run("connect", "codex", "--url", "127.0.0.1:8765", expect=1)
    assert "is not the address" in not_a_url.stderr
    assert not (home.root / ".codex" / "config.toml").exists()
