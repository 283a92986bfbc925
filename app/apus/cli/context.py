"""Shared state of one CLI run: settings from every layer, and friendly error exits."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import click

from apus.config import Settings, load_settings
from apus.errors import ApusError

T = TypeVar("T")


@dataclass
class AppContext:
    vault: Path | None = None
    config_file: Path | None = None
    overrides: dict[str, object] = field(default_factory=dict)
    _settings: Settings | None = None

    def settings(self) -> Settings:
        if self._settings is None:
            overrides = dict(self.overrides)
            if self.vault is not None:
                overrides["vault"] = str(self.vault.expanduser().resolve())
            if self.config_file is not None:
                # Background work started by this run (a re-embed) must read the same file.
                os.environ["APUS_CONFIG"] = str(self.config_file.expanduser().resolve())
            self._settings = load_settings(config_file=self.config_file, overrides=overrides)
        return self._settings


def run_guarded(action: Callable[[], T]) -> T:
    """Run a command body; turn Apus errors into a clear message and exit status 1."""
    try:
        return action()
    except ApusError as exc:
        click.secho(f"Error: {exc.message}", fg="red", err=True)
        if exc.fix:
            click.echo(f"Fix: {exc.fix}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
