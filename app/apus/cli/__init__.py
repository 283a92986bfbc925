"""The `apus` command line. `apus` alone opens the TUI; heavy imports wait for their command."""

from __future__ import annotations

from pathlib import Path

import click

from apus import __version__
from apus.cli.context import guarded, run_guarded
from apus.config import SettingsSource


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
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


def _register() -> None:
    from apus.cli.agents import mcp
    from apus.cli.bench import bench, bench_worker
    from apus.cli.doctor import doctor
    from apus.cli.evaluate import evaluate
    from apus.cli.memory import memory
    from apus.cli.models import models, serve_embeddings
    from apus.cli.sessions import sessions

    main.add_command(memory)
    main.add_command(models)
    main.add_command(bench)
    main.add_command(bench_worker)
    main.add_command(evaluate)
    main.add_command(serve_embeddings)
    main.add_command(mcp)
    main.add_command(sessions)
    main.add_command(doctor)


_register()
