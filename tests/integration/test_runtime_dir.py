"""The runtime folder (the embedding server's state file): private to us, or a fallback.

Without XDG_RUNTIME_DIR, platformdirs uses `runtime-<uid>` in the temporary folder, a
name any other user can create first. Such a folder must not be used, and must not stop
Apus either: every command falls back to the state folder.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from support.tiny_gguf import write_tiny_gguf
from support.vaults import cli_env, run_apus, write_note

NOBODY = 65534  # the conventional unprivileged user and group


def _foreign_runtime_base(tmp_path: Path) -> Path:
    """A temporary folder whose `runtime-<uid>` another user made first (as root: chown)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("creating a folder owned by another user needs root")
    if Path(f"/run/user/{os.geteuid()}").is_dir():
        pytest.skip("this machine has a real /run/user runtime folder, used before the fallback")
    temp = tmp_path / "tmp"
    temp.mkdir()
    squatted = temp / f"runtime-{os.geteuid()}"
    squatted.mkdir(mode=0o777)
    (squatted / "apus").mkdir(mode=0o777)
    os.chown(squatted, NOBODY, NOBODY)
    os.chown(squatted / "apus", NOBODY, NOBODY)
    return temp


def _env_without_runtime_dir(temp: Path, **extra: str) -> dict[str, str]:
    env = cli_env(TMPDIR=str(temp), **extra)
    env.pop("XDG_RUNTIME_DIR", None)
    return env


def test_a_runtime_folder_another_user_made_is_not_used(tmp_path: Path) -> None:
    temp = _foreign_runtime_base(tmp_path)
    env = _env_without_runtime_dir(temp)
    script = "from apus import paths; print(paths.runtime_dir())"
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    chosen = Path(result.stdout.strip())
    assert chosen == Path(env["XDG_STATE_HOME"]) / "apus" / "run"
    info = chosen.stat()
    assert info.st_uid == os.geteuid()
    assert stat.S_IMODE(info.st_mode) == 0o700
    assert os.listdir(temp / f"runtime-{os.geteuid()}" / "apus") == []


def test_commands_work_with_a_local_model_and_a_squatted_runtime_folder(tmp_path: Path) -> None:
    temp = _foreign_runtime_base(tmp_path)
    model = write_tiny_gguf(tmp_path / "tiny.gguf", name="tiny-embeddinggemma")
    vault = tmp_path / "vault"
    write_note(vault, "a.md", "# A\n\nThe axolotl swims.\n")
    env = _env_without_runtime_dir(
        temp,
        APUS_MEMORY__SEARCH__PROVIDER="local",
        APUS_MEMORY__SEARCH__LOCAL__MODELPATH=str(model),
    )
    run_apus("--vault", vault, "memory", "index", "--json", env=env)
    found = run_apus(
        "--vault", vault, "memory", "search", "--json", "--mode", "keyword", "axolotl", env=env
    )
    assert [hit["path"] for hit in json.loads(found.stdout)["results"]] == ["a.md"]
    status = run_apus("--vault", vault, "memory", "status", "--json", env=env)
    assert json.loads(status.stdout)["files"] == 1
