"""The command line a client runs to start this Apus: its own executable and absolute paths."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Launch:
    """A program and its arguments, as a client's config names them."""

    command: str
    args: tuple[str, ...]

    def shell(self) -> str:
        """One shell line (a Claude Code hook is a command string, not a list)."""
        return shlex.join([self.command, *self.args])


def own_executable() -> list[str]:
    """The argv prefix that runs this installation of Apus from anywhere.

    A packaged binary is `sys.executable` itself (PyInstaller's one-file binary reports its own
    path there, not its unpack folder). An installed script is the file the shell ran, kept
    as typed (not resolved), so a pipx or uv link survives an upgrade of what it points to.
    Anything else (`python -m apus`, a test) runs this interpreter with `-m apus`.
    """
    if getattr(sys, "frozen", False):
        return [str(Path(sys.executable).absolute())]
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    named_apus = script is not None and script.name.startswith("apus") and script.suffix != ".py"
    if script is not None and named_apus and script.is_file():
        return [str(script.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "apus"]


def apus_launch(
    *subcommand: str, vault: Path, config_file: Path | None = None, prefix: list[str] | None = None
) -> Launch:
    """`apus --vault VAULT [--config FILE] SUBCOMMAND...` with absolute paths."""
    argv = prefix if prefix is not None else own_executable()
    options = ["--vault", str(vault.expanduser().absolute())]
    if config_file is not None:
        options += ["--config", str(config_file.expanduser().absolute())]
    return Launch(argv[0], (*argv[1:], *options, *subcommand))


def runs_apus(command: str, args: Sequence[str]) -> bool:
    """Whether a client's entry starts some Apus (this one or another install)."""
    name = Path(command).name.lower()
    if name.startswith("apus"):
        return True
    words = list(args)
    return any(words[i : i + 2] == ["-m", "apus"] for i in range(len(words) - 1))


def vault_of(args: Sequence[str]) -> str | None:
    """The `--vault` an Apus entry names, if any."""
    for i, arg in enumerate(args[:-1]):
        if arg == "--vault":
            return str(args[i + 1])
    return None
