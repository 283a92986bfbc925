"""The `apus` command line. `apus` alone opens the TUI; heavy imports wait for their command."""

from __future__ import annotations

import importlib
from pathlib import Path

import click

from apus import __version__
from apus.cli.context import guarded, run_guarded
from apus.config import SettingsSource

# Each command's module, imported when that command runs (or help lists it): a search pays for
# the search command's imports, not for the agent server's, the benchmarks' or the doctor's.
_COMMANDS = {
    "memory": "apus.cli.memory:memory",
    "models": "apus.cli.models:models",
    "bench": "apus.cli.bench:bench",
    "_bench-worker": "apus.cli.bench:bench_worker",
    "eval": "apus.cli.evaluate:evaluate",
    "_serve-embeddings": "apus.cli.models:serve_embeddings",
    "mcp": "apus.cli.agents:mcp",
    "sessions": "apus.cli.sessions:sessions",
    "doctor": "apus.cli.doctor:doctor",
    "connect": "apus.cli.connect:connect",
    "hook": "apus.cli.hook:hook",
}


class _LazyGroup(click.Group):
    """A group whose commands (but `setup`, defined here) are imported by name on use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, attribute = _COMMANDS[cmd_name].split(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(
    cls=_LazyGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--vault",
    # Kept as typed: the domain checks it and says what is wrong ('' is not ".").
    type=str,
    envvar="APUS_VAULT",
    help="Notes folder for this run (default: `vault` in config.toml). Env: APUS_VAULT.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="APUS_CONFIG",
    help="Use this config.toml instead of the default one. Env: APUS_CONFIG.",
)
@click.version_option(__version__, "-V", "--version", prog_name="apus")
@click.pass_context
def main(ctx: click.Context, vault: str | None, config_file: Path | None) -> None:
    """Apus: search a folder of Markdown notes by meaning and by exact words, offline.

    Run `apus` alone to open the app, or use the commands below from a shell or a script
    (most take --json).
    """
    ctx.obj = SettingsSource(config_file=config_file, vault=vault)
    if ctx.invoked_subcommand is None:
        run_guarded(lambda: _open_tui(ctx.obj))


def _open_tui(source: SettingsSource) -> None:
    try:
        from apus.tui.app import run_app
    except ImportError:
        click.echo(
            "The interactive app is not available in this build. Try:\n"
            "  apus memory index           build or update the index\n"
            "  apus memory search QUERY    search your notes\n"
            "  apus memory status          what is indexed\n"
            "  apus --help                 everything else"
        )
        return
    run_app(source)


@main.command()
@click.pass_obj
@guarded
def setup(source: SettingsSource) -> None:
    """First-run wizard: notes folder, embedding provider, model download, first index."""
    from apus.tui.app import run_setup

    run_setup(source)
