"""The human-readable CLI output never passes a note's control characters to the terminal.

Names, titles and text of notes are printed with their control characters shown as
visible stand-ins (ESC as "␛") and never read as markup, with or without colours.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.vaults import cli_env, index_vault, run_apus

CONTROLS = ("\x1b", "\x07", "\x9b", "\r")


@pytest.fixture
def hostile_vault(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "evil\x1b[2J.md").write_text(
        "# Title \x1b]0;pwned\x07 [link=http://evil.example]click[/link]\n\n"
        "The heron \x1b[31mred\x9b31m waits\rOVERWRITTEN in the reeds.\n",
        encoding="utf-8",
    )
    (vault / "blink\x1b[5m.md").write_bytes(b"\x00binary")  # skipped: listed by status
    return vault


@pytest.mark.parametrize("colours", [False, True], ids=["plain", "forced-colours"])
def test_search_and_status_show_control_characters_without_obeying_them(
    hostile_vault: Path, colours: bool
) -> None:
    env = cli_env(**({"FORCE_COLOR": "1"} if colours else {}))
    if not colours:
        env.pop("FORCE_COLOR", None)
    index_vault(hostile_vault, env)

    found = run_apus("--vault", hostile_vault, "memory", "search", "heron", env=env).stdout
    status = run_apus("--vault", hostile_vault, "memory", "status", env=env).stdout

    for output in (found, status):
        # Colours are ESC sequences too; what must never appear are the notes' own.
        for sequence in ("\x1b[2J", "\x1b]0;", "\x07", "\x9b", "\x1b[31m", "\x1b[5m", "\x1b]8;"):
            assert sequence not in output, (sequence, output)
        assert "\r" not in output
        if not colours:
            assert not any(control in output for control in CONTROLS), output
    assert "evil\u241b[2J.md" in found
    assert "\u241b]0;pwned\u2407" in found
    assert "[link=http://evil.example]click[/link]" in found
    assert "\u241b[31mred\ufffd31m" in found
    assert "blink\u241b[5m.md" in status
