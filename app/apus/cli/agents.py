"""`apus mcp`: the agent face, a Model Context Protocol server on stdin/stdout."""

from __future__ import annotations

import click

from apus.cli.context import current_source, guarded


@click.command("mcp")
@click.option(
    "--writable",
    is_flag=True,
    help="Offer memory_write: the agent may append entries to today's daily note, MEMORY.md "
    "and USER.md (as memory.write.enabled = true).",
)
@guarded
def mcp(writable: bool) -> None:
    """Serve this vault's memory to an agent over MCP (stdio).

    Tools: memory_search, memory_get, memory_related, memory_recall, memory_status,
    sessions_search, sessions_history, and memory_write when writing is on. The index
    follows the vault while it runs. Register it with an MCP client as the command
    `apus --vault PATH mcp` (see the README).
    """
    import dataclasses

    from apus.agents.server import serve

    source = current_source()
    if writable:
        overrides = {**source.overrides, "memory.write.enabled": True}
        source = dataclasses.replace(source, overrides=overrides)
    serve(source)
