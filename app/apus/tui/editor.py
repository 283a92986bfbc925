"""The command line that opens a note in the user's editor at a given line."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

# Editors that take `path:line` instead of `+line path`.
_COLON_STYLE = {"hx", "helix", "subl", "zed"}
# Editors that need a flag before `path:line`.
_GOTO_FLAG = {"code": "-g", "codium": "-g", "code-insiders": "-g", "cursor": "-g"}


class NoEditorError(Exception):
    """Neither $VISUAL nor $EDITOR is set."""


def editor_command(path: Path, line: int, environ: Mapping[str, str] | None = None) -> list[str]:
    """argv to edit `path` at `line` with $VISUAL or $EDITOR (which may carry arguments)."""
    env = os.environ if environ is None else environ
    editor = env.get("VISUAL") or env.get("EDITOR")
    if not editor:
        raise NoEditorError("Set $EDITOR (for example `export EDITOR=nano`) to edit notes.")
    argv = shlex.split(editor)
    name = Path(argv[0]).name
    line = max(1, line)
    if name in _GOTO_FLAG:
        return [*argv, _GOTO_FLAG[name], f"{path}:{line}"]
    if name in _COLON_STYLE:
        return [*argv, f"{path}:{line}"]
    return [*argv, f"+{line}", str(path)]
