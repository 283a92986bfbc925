"""What one CLI run shares: where its settings come from, and friendly error exits."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from apus.config import SettingsSource
from apus.errors import ApusError
from apus.terminal_text import terminal_safe

T = TypeVar("T")
P = ParamSpec("P")


def current_source() -> SettingsSource:
    """The settings source the `apus` group built from --vault and --config."""
    source = click.get_current_context().find_object(SettingsSource)
    return source if source is not None else SettingsSource()


def run_guarded(action: Callable[[], T]) -> T:
    """Run a command body; turn Apus errors into a clear message and exit status 1."""
    try:
        return action()
    except ApusError as exc:
        # Messages carry paths and names from the vault: shown, never obeyed.
        click.secho(f"Error: {terminal_safe(exc.reason)}", fg="red", err=True)
        if exc.fix:
            click.echo(f"Fix: {terminal_safe(exc.fix)}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)


def guarded(command: Callable[P, T]) -> Callable[P, T]:
    """A command whose whole body runs under `run_guarded` (put it just above the `def`,
    below the click decorators)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_guarded(lambda: command(*args, **kwargs))

    return run
