"""`apus memory status` while another process builds the index says so, and how far,
instead of telling the user to run the command that is already running."""

from __future__ import annotations

from pathlib import Path

from support.holds import Hold, held_index
from support.vaults import run_json, write_note


def test_status_names_the_index_being_built_elsewhere(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for i in range(1200):
        write_note(vault, f"notes/n{i:04d}.md", f"# Note {i}\n\nA wren, marker{i:04d}.\n")
    hold = Hold(tmp_path / "hold")
    with held_index(vault, hold, "index:500"):
        status = run_json("--vault", vault, "memory", "status", "--json")
        assert status["keyword"] == (
            "being built by another Apus process (Reading notes 500 of 1200)"
        )
    assert run_json("--vault", vault, "memory", "status", "--json")["keyword"] == "ready"
