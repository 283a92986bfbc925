"""What one CLI run shares: where its settings come from, and friendly error exits."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from apus.config import SettingsSource
from apus.errors import ApusError
from apus.terminal_text import terminal_safe

T = TypeVar("T")
_SURROGATE = re.compile("[\ud800-\udfff]")
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
    below the click decorators), its text arguments checked first (`check_utf8`)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        def checked() -> T:
            check_utf8(kwargs)
            return command(*args, **kwargs)

        return run_guarded(checked)

    return run


def check_utf8(arguments: dict[str, object]) -> None:
    """Refuse text arguments holding bytes that are not UTF-8, as the notes folder's name is
    refused: Python hands such bytes over as lone surrogates, which no index or terminal can
    take. File paths (click.Path) may hold them and are left alone."""
    context = click.get_current_context(silent=True)
    params = {} if context is None else {p.name: p for p in context.command.params}
    for name, value in arguments.items():
        param = params.get(name)
        if param is None or isinstance(param.type, click.Path):
            continue
        for text in value if isinstance(value, tuple) else (value,):
            if isinstance(text, str) and _SURROGATE.search(text):
                shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
                label = param.opts[0] if isinstance(param, click.Option) else name
                raise ApusError(
                    f"The {label} '{shown}' holds bytes that are not UTF-8.",
                    fix="type it in UTF-8 (a terminal set to a UTF-8 locale, e.g. LANG=C.UTF-8)",
                )
