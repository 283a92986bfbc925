"""`apus hook claude-code` as Claude Code runs it: a process with the hook's JSON on stdin,
installed by `apus connect claude-code --hooks` and run through the shell from settings.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apus.clients.hook import MAX_CONTEXT_CHARS, MAX_ENTRIES
from support.vaults import APUS, cli_env, index_vault, run_apus, run_json, write_note

MEMORY = """# Memory

## Deploys
<!-- importance: 8 -->
<!-- triggers: deploy the blog; publish the site -->
The blog deploys with rsync to the staging host first, then production.

## Router
<!-- triggers: wifi password -->
The router admin password is in the password manager under "home router".
"""

USER = """# User

## Tea
<!-- importance: 9 -->
Sam prefers green tea in the afternoon.
"""


def event(name: str, **fields: Any) -> str:
    return json.dumps(
        {
            "session_id": "0d6c1e9e",
            "transcript_path": "/home/me/.claude/projects/site/0d6c1e9e.jsonl",
            "cwd": "/home/me/site",
            "hook_event_name": name,
            **fields,
        }
    )


def hook(
    vault: Path, stdin: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APUS, "--vault", str(vault), "hook", "claude-code"],
        input=stdin,
        env=env or cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def hook_log() -> str:
    path = Path(os.environ["XDG_STATE_HOME"]) / "apus" / "log" / "hook.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write_note(root, "MEMORY.md", MEMORY)
    write_note(root, "USER.md", USER)
    write_note(root, "projects/blog.md", "# Blog\n\nWe deploy the blog on Fridays.\n")
    index_vault(root)
    return root


def test_a_prompt_that_names_a_trigger_gets_its_entry_with_the_citation(vault: Path) -> None:
    done = hook(vault, event("UserPromptSubmit", prompt="Can you deploy the blog today?"))
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    context = output["additionalContext"]
    recalled = run_json(
        "--vault", vault, "memory", "recall", "Can you deploy the blog today?", "--json"
    )
    first = recalled["entries"][0]
    citation = f"{first['path']}#L{first['start_line']}-L{first['end_line']}"
    assert f"- {citation} (trigger: deploy the blog): " in context
    assert "rsync to the staging host" in context
    assert "projects/blog.md" not in context  # only the trusted notes recall


def test_a_prompt_with_no_trigger_adds_nothing(vault: Path) -> None:
    done = hook(vault, event("UserPromptSubmit", prompt="What is the capital of Peru?"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_session_starts_with_the_users_top_entries(vault: Path) -> None:
    done = hook(vault, event("SessionStart", source="startup"))
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert "- USER.md#L1-L" in output["additionalContext"]
    assert "green tea" in output["additionalContext"]


def test_the_context_is_small_whatever_memory_holds(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    entries = [
        f"## Entry {n}\n<!-- triggers: release checklist -->\n" + f"Step {n}: " + "details " * 150
        for n in range(12)
    ]
    write_note(root, "MEMORY.md", "# Memory\n\n" + "\n\n".join(entries))
    index_vault(root)
    done = hook(root, event("UserPromptSubmit", prompt="run the release checklist"))
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert 1 <= context.count("\n- MEMORY.md#L") <= MAX_ENTRIES
    assert len(context) <= MAX_CONTEXT_CHARS


@pytest.mark.parametrize(
    "stdin",
    ["", "not json", "[1, 2]", event("UserPromptSubmit"), event("Stop", stop_hook_active=False)],
    ids=["empty", "not-json", "not-an-object", "no-prompt", "another-event"],
)
def test_anything_else_fails_open(vault: Path, stdin: str) -> None:
    done = hook(vault, stdin)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_no_index_yet_fails_open_and_says_why_in_the_log(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    write_note(root, "MEMORY.md", MEMORY)
    done = hook(root, event("UserPromptSubmit", prompt="deploy the blog"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "no index" in hook_log() and "apus memory index" in hook_log()
    gone = hook(tmp_path / "missing", event("UserPromptSubmit", prompt="deploy the blog"))
    assert (gone.returncode, gone.stdout, gone.stderr) == (0, "", "")
    assert "VaultMissingError" in hook_log() or "missing" in hook_log().lower()


def test_the_embedding_model_is_never_started(vault: Path, tiny_model: Path) -> None:
    """With the local model configured, recall still answers by words and no server runs."""
    env = cli_env(
        APUS_MEMORY__SEARCH__PROVIDER="local",
        APUS_MEMORY__SEARCH__LOCAL__MODELPATH=str(tiny_model),
    )
    done = hook(vault, event("UserPromptSubmit", prompt="deploy the blog please"), env=env)
    assert "deploy the blog" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    runtime = Path(os.environ["XDG_RUNTIME_DIR"]) / "apus"
    assert not list(runtime.glob("embed-server-*")) if runtime.exists() else True


SETTINGS = """{
  "model": "opus",
  "hooks": {
    "UserPromptSubmit": [
      {
        "hooks": [
          {"type": "command", "command": "~/bin/remind.sh"}
        ]
      }
    ],
    "Stop": [
      {"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}]}
    ]
  }
}
"""


def test_connect_installs_the_hooks_beside_others_and_claude_code_can_run_them(
    vault: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(SETTINGS, encoding="utf-8")
    env = cli_env(HOME=str(home), PATH=str(tmp_path / "no-bin"))
    env.pop("CLAUDE_CONFIG_DIR", None)
    result = run_apus("--vault", vault, "connect", "claude-code", "--hooks", env=env)
    assert "hooks added in ~/.claude/settings.json" in result.stdout
    data = json.loads(settings.read_text(encoding="utf-8"))
    assert data["model"] == "opus"
    assert data["hooks"]["Stop"] == json.loads(SETTINGS)["hooks"]["Stop"]
    prompt_groups = data["hooks"]["UserPromptSubmit"]
    assert prompt_groups[0] == json.loads(SETTINGS)["hooks"]["UserPromptSubmit"][0]
    ours = prompt_groups[1]["hooks"][0]
    assert (ours["type"], ours["timeout"]) == ("command", 10)
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["command"] == ours["command"]
    assert "mcpServers" in json.loads((home / ".claude.json").read_text(encoding="utf-8"))

    # Claude Code runs the command through the shell with the event on stdin.
    ran = subprocess.run(
        ["/bin/sh", "-c", ours["command"]],
        input=event("UserPromptSubmit", prompt="what is the wifi password again"),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "password manager" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]

    installed = settings.read_bytes()
    again = run_apus("--vault", vault, "connect", "claude-code", "--hooks", env=env)
    assert "hooks already there, unchanged" in again.stdout
    assert settings.read_bytes() == installed

    run_apus("--vault", vault, "connect", "claude-code", "--remove", "--hooks", env=env)
    assert settings.read_text(encoding="utf-8") == SETTINGS
    assert "apus" in json.loads((home / ".claude.json").read_text(encoding="utf-8"))["mcpServers"]


# What the hook's process never loads: numbers and vectors, the embedding side (so no model
# server is started or reached), HTTP, the agent server, the app, the index's writers.
NOT_FOR_THE_HOOK = (
    "numpy",
    "faiss",
    "httpx",
    "llama_cpp",
    "mcp",
    "pydantic",
    "textual",
    "tomlkit",
    "yaml",
    "whoosh.index",
    "apus.embed.base",
    "apus.embed.providers",
    "apus.memory.session",
    "apus.search.engine",
    "apus.indexing.sync",
    "apus.clients.connect",
)


def test_the_hook_loads_only_what_it_uses(vault: Path) -> None:
    code = (
        "import sys\n"
        "from apus.cli import main\n"
        "try:\n"
        f"    main(['--vault', {str(vault)!r}, 'hook', 'claude-code'])\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        f"loaded = [m for m in {NOT_FOR_THE_HOOK!r} if m in sys.modules]\n"
        "print('LOADED', ','.join(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=event("UserPromptSubmit", prompt="deploy the blog"),
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert "rsync" in lines[0]  # it did answer
    assert lines[-1] == "LOADED"
