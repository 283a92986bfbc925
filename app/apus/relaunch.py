"""How Apus starts another copy of itself: the embedding server, a detached index, a benchmark step.

From a checkout or a wheel that is `python -m <module>`; a frozen binary has no `-m`, so it runs
itself with a hidden subcommand that leads to the same code.
"""

from __future__ import annotations

import sys


def own_command(module: str, *, frozen_entry: tuple[str, ...] = ()) -> list[str]:
    """The argv prefix that runs `module` as a program in this installation."""
    if getattr(sys, "frozen", False):
        return [sys.executable, *frozen_entry]
    return [sys.executable, "-m", module]
