"""The setup wizard's last step offers to connect the agent clients it finds to the new vault."""

from __future__ import annotations

import tomllib
from pathlib import Path

from textual.widgets import Button, Static

from apus.clients.catalog import Places
from apus.tui.screens.wizard import WizardOptions

from .factory import SIZE, fixed_hardware, make_app, settle

CODEX = '# mine\n[mcp_servers.context7]\ncommand = "npx"\n'


async def test_the_clients_found_can_be_connected_from_the_last_step(
    vault: Path, config_file: Path, tmp_path: Path
) -> None:
    home = tmp_path / "agent-home"
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "config.toml").write_text(CODEX, encoding="utf-8")
    (home / ".gemini").mkdir()
    places = Places(home, {"PATH": str(tmp_path / "no-bin")}, "Linux", tmp_path)
    options = WizardOptions(
        config_file=config_file,
        detect_hardware=fixed_hardware,
        folder_root=config_file.parent,
        places=places,
    )
    app = make_app(None, config_file, wizard=options)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"~/notes", "enter")
        await settle(pilot)
        await pilot.press("ctrl+n")  # keyword only, saved; the first index runs
        await settle(pilot)
        assert app.screen.step == "index"  # type: ignore[attr-defined]
        offered = [button.id for button in app.screen.query(".connect-client").results(Button)]
        assert offered == ["connect-codex", "connect-gemini-cli"]
        await pilot.click("#connect-codex")
        await settle(pilot)
        said = str(app.screen.query_one("#index-connect", Static).render())
        assert "✓ Codex: Apus added in" in said
        assert app.screen.query_one("#connect-codex", Button).disabled
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text(encoding="utf-8"))
    assert codex["mcp_servers"]["context7"] == {"command": "npx"}
    args = codex["mcp_servers"]["apus"]["args"]
    # The wizard's own config file (not the default one here) travels with the vault.
    assert args[-5:] == ["--vault", str(vault), "--config", str(config_file), "mcp"]
    assert not (home / ".gemini" / "settings.json").exists()
