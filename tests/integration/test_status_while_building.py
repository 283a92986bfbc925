"""`apus memory status` while another process builds the index says so, and how far,
instead of telling the user to run the command that is already running."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.holds import Hold
from support.vaults import APUS, cli_env, run_json, write_note


def test_status_names_the_index_being_built_elsewhere(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for i in range(1200):
        write_note(vault, f"notes/n{i:04d}.md", f"# Note {i}\n\nA wren, marker{i:04d}.\n")
    hold = Hold(tmp_path / "hold")
    proc = subprocess.Popen(
        [*APUS, "--vault", str(vault), "memory", "index"],
        env=cli_env(**hold.env("index:500")),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        hold.wait_held(proc=proc)
        status = run_json("--vault", vault, "memory", "status", "--json")
        assert status["keyword"] == (
            "being built by another Apus process (Reading notes 500 of 1200)"
        )
        hold.release()
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert run_json("--vault", vault, "memory", "status", "--json")["keyword"] == "ready"
