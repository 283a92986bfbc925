"""`apus mcp`: the agent face, a Model Context Protocol server on stdin/stdout."""

from __future__ import annotations

import click

from apus.cli.context import current_source, run_guarded


@click.command("mcp")
def mcp() -> None:
    """Serve this vault's memory to an agent over MCP (stdio).

    Tools: memory_search, memory_get, memory_related, memory_recall, memory_status. The index
    follows the vault while it runs. Register it with an MCP client as the command
    `apus --vault PATH mcp` (see the README).
    """

    def body() -> None:
        from apus.agents.server import serve

        serve(current_source())

    run_guarded(body)
