"""`apus connect` checked by the real clients: Claude Code and Codex from the npm registry.

    .venv/bin/python tests/support/real_clients.py [--scratch DIR]     (or: make check-clients)

Installs @anthropic-ai/claude-code and @openai/codex into a scratch folder, points HOME there
(no file of yours is read or changed), indexes a copy of the sample vault by keyword, then:
`apus connect claude-code` (through `claude mcp add-json`, since claude is on PATH) and
`claude mcp list`, which starts the server and must print it `✔ Connected`, then the same
connect again, which must change nothing; `apus connect codex` and `codex mcp list`, which must
list it enabled. Then over HTTP: `apus mcp --http --port 0` on the same vault, `apus connect
claude-code --url URL` and `claude mcp list` (✔ Connected), `apus connect codex --url URL` and
`codex mcp list` (enabled), and the MCP Inspector's CLI listing the tools over `--transport
http`. Needs node and npm, and the network
for the npm registry: not part of `make test`. Exits 1 when a client does not see Apus.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSPECTOR_ARGS = ("--transport", "http", "--method", "tools/list")
PACKAGES = ("@anthropic-ai/claude-code", "@openai/codex", "@modelcontextprotocol/inspector")


def run(command: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    """Run and echo a command with its output; its output, whatever its exit status."""
    print(f"$ {' '.join(Path(command[0]).name if i == 0 else a for i, a in enumerate(command))}")
    done = subprocess.run(
        command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    output = (done.stdout + done.stderr).rstrip()
    if output:
        print(output)
    if done.returncode != 0:
        print(f"(exit status {done.returncode})")
    return output


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scratch", type=Path, help="Work here (default: a temporary folder).")
    options = parser.parse_args()
    npm = shutil.which("npm")
    if npm is None:
        print("npm is not on PATH: install Node.js (with npm) first.", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="apus-clients-") as temporary:
        scratch = (options.scratch or Path(temporary)).resolve()
        return check(scratch, npm)


def check(scratch: Path, npm: str) -> int:
    apus = str(Path(sys.executable).parent / "apus")
    home = scratch / "home"
    vault = scratch / "vault"
    home.mkdir(parents=True, exist_ok=True)
    if not vault.exists():
        shutil.copytree(REPO / "assets" / "sample-vault", vault)
    node_bin = scratch / "npm" / "node_modules" / ".bin"
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("APUS_", "CLAUDE_", "CODEX_", "XDG_"))
    }
    env.update(
        HOME=str(home),
        PATH=f"{node_bin}{os.pathsep}{env.get('PATH', os.defpath)}",
        APUS_MEMORY__SEARCH__PROVIDER="none",  # keyword search: no model download
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
    )
    run(
        [npm, "install", "--prefix", str(scratch / "npm"), "--no-audit", "--no-fund", *PACKAGES],
        env,
    )
    run([str(node_bin / "claude"), "--version"], env)
    run([str(node_bin / "codex"), "--version"], env)
    run([apus, "--vault", str(vault), "memory", "index"], env)

    run([apus, "--vault", str(vault), "connect", "claude-code"], env, cwd=home)
    claude_list = run([str(node_bin / "claude"), "mcp", "list"], env, cwd=home)
    again = run([apus, "--vault", str(vault), "connect", "claude-code"], env, cwd=home)
    run([apus, "--vault", str(vault), "connect", "codex"], env, cwd=home)
    codex_list = run([str(node_bin / "codex"), "mcp", "list"], env, cwd=home)
    run([apus, "connect"], env, cwd=home)

    claude_ok = any(
        line.startswith("apus:") and "✔ Connected" in line for line in claude_list.splitlines()
    )
    codex_ok = any(
        line.split()[:1] == ["apus"] and "enabled" in line for line in codex_list.splitlines()
    )
    unchanged = "unchanged" in again
    over_http = check_http(apus, vault, home, node_bin, env)
    print(f"\nclaude mcp list shows apus connected: {'yes' if claude_ok else 'NO'}")
    print(f"a second connect changes nothing:     {'yes' if unchanged else 'NO'}")
    print(f"codex mcp list shows apus enabled:    {'yes' if codex_ok else 'NO'}")
    for said, ok in over_http.items():
        print(f"{said + ':':<37} {'yes' if ok else 'NO'}")
    return 0 if claude_ok and codex_ok and unchanged and all(over_http.values()) else 1


def check_http(
    apus: str, vault: Path, home: Path, node_bin: Path, env: dict[str, str]
) -> dict[str, bool]:
    """The same clients, and the MCP Inspector, on one `apus mcp --http` by its URL."""
    server = subprocess.Popen(
        [apus, "--vault", str(vault), "mcp", "--http", "--port", "0"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        url = ""
        for line in server.stderr:  # the server says where it listens once it does
            print(line.rstrip())
            if " at http://" in line:
                url = line.split(" at ", 1)[1].split()[0]
                break
        if not url:
            return {"apus mcp --http started": False}
        run([apus, "--vault", str(vault), "connect", "claude-code", "--url", url], env, cwd=home)
        claude_list = run([str(node_bin / "claude"), "mcp", "list"], env, cwd=home)
        run([apus, "--vault", str(vault), "connect", "codex", "--url", url], env, cwd=home)
        codex_list = run([str(node_bin / "codex"), "mcp", "list"], env, cwd=home)
        inspector = run(
            [str(node_bin / "mcp-inspector"), "--cli", url, *INSPECTOR_ARGS],
            env,
            cwd=home,
        )
    finally:
        server.terminate()
        server.wait(timeout=60)
    return {
        "over HTTP, claude mcp list connected": any(
            line.startswith("apus:") and url in line and "✔ Connected" in line
            for line in claude_list.splitlines()
        ),
        "over HTTP, codex mcp list enabled": any(
            line.split()[:1] == ["apus"] and url in line and "enabled" in line
            for line in codex_list.splitlines()
        ),
        "the Inspector lists memory_search": '"memory_search"' in inspector,
    }


if __name__ == "__main__":
    sys.exit(main())
