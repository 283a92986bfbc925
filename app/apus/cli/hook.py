"""`apus hook claude-code`: Claude Code's hook (JSON on stdin) answered with trusted entries."""

from __future__ import annotations

import sys

import click

from apus.cli.context import current_source


@click.command("hook")
@click.argument("client", type=click.Choice(["claude-code"]))
def hook(client: str) -> None:
    """Answer a Claude Code hook: on UserPromptSubmit, the MEMORY.md / USER.md entries whose
    triggers match the prompt; on SessionStart, USER.md's top entries. At most three, with
    their citations, as `hookSpecificOutput.additionalContext`.

    Never starts the embedding model. Fails open: on any error (no index yet, a bad vault)
    it prints nothing, exits 0 and writes the reason to hook.log in Apus's log folder.
    Installed by `apus connect claude-code --hooks`.
    """
    try:
        import json

        from apus.clients.hook import answer, read_event

        output = answer(read_event(sys.stdin.read()), current_source().load())
        if output is not None:
            sys.stdout.write(json.dumps(output) + "\n")
    except Exception as exc:  # fail open: a turn must never wait on, or break for, recall
        from apus.clients.hook import log

        log(f"{client}: {type(exc).__name__}: {exc}")
