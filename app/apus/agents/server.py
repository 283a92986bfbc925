"""`apus mcp`: one vault's memory as a Model Context Protocol server, on stdio or, for many
clients at once, on Streamable HTTP (`apus.agents.http_server`).

While it runs, the index follows the vault (the watcher and debounced syncs in the
background; searches serve meanwhile), the embedding model stays loaded, and the managed
embedding server and the writer lock are shared with every other `apus` process. Stdout
carries only protocol messages: logs go to the log file and stderr.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools.base import Tool
from mcp_types import ToolAnnotations

from apus import __version__, paths
from apus.agents.arguments import CheckedTool, publish_defaults
from apus.agents.stdio import run_stdio
from apus.agents.tool_errors import AnsweringServer
from apus.agents.tools import AgentTools
from apus.config import SettingsSource
from apus.index.status import EmbeddingsState, IndexStatus
from apus.memory import Memory
from apus.search.time_words import today, window_in_query

if TYPE_CHECKING:
    from apus.agents.http_server import Binding

log = logging.getLogger(__name__)

# Each tool and its title; all of them only read, and asking twice gives the same answer
# (for an unchanged vault), so a client may run them without asking the user.
TOOL_TITLES = {
    "memory_search": "Search memory",
    "memory_get": "Read a note",
    "memory_related": "Related notes",
    "memory_recall": "Recall by trigger phrase",
    "memory_status": "Memory status",
    "sessions_search": "Search earlier conversations",
    "sessions_history": "Read an earlier conversation",
}
TOOL_NAMES = tuple(TOOL_TITLES)
# Listed only when writing is on (memory.write.enabled, `apus mcp --writable`).
WRITE_TOOL = ("memory_write", "Remember (append to memory notes)")


def build_server(memory: Memory) -> MCPServer:
    """The server and its tools over `memory` (not started)."""

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[None]:
        memory.start_live()
        _warm_up(memory)
        # dateparser loads its language data on first use (about a second): not in a search.
        threading.Thread(
            target=window_in_query, args=("last week",), kwargs={"today": today()}, daemon=True
        ).start()
        try:
            yield None
        finally:
            await anyio.to_thread.run_sync(memory.close)

    return AnsweringServer(
        "apus",
        title="Apus memory",
        version=__version__,
        # Made now, sent once the lifespan has started the sync: what it says of a first
        # index (read now, searchable by words as it goes) holds from then on.
        instructions=instructions(
            memory.status(),
            keyword=memory.searcher().keyword_ready(),
            writable=memory.settings.memory.write.enabled,
        ),
        lifespan=lifespan,
        log_level="WARNING",
        tools=_tools(memory),
    )


def _tools(memory: Memory) -> list[Tool]:
    tools = AgentTools(memory, today=today)
    query = memory.settings.search.query
    registered = []
    for name, title in TOOL_TITLES.items():
        # memory_search's two defaults come from the settings; the other tools' are their own.
        defaults: dict[str, object] = {"maxResults": query.max_results, "minScore": query.min_score}
        shown = defaults if name == "memory_search" else {}
        registered.append(_tool(tools, name, title, read_only=True, defaults=shown))
    if memory.settings.memory.write.enabled:
        # It adds to the notes and never removes; two calls add two entries.
        name, title = WRITE_TOOL
        registered.append(_tool(tools, name, title, read_only=False))
    return registered


def _tool(
    tools: AgentTools,
    name: str,
    title: str,
    *,
    read_only: bool,
    defaults: dict[str, object] | None = None,
) -> Tool:
    """One tool with its title and annotations: a read tool is idempotent, the write tool
    (appends only) is neither read-only nor idempotent, and neither destroys anything."""
    tool = CheckedTool.from_function(
        getattr(tools, name),
        name=name,
        title=title,
        annotations=ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=False,
            idempotent_hint=read_only,
            open_world_hint=False,
        ),
    )
    publish_defaults(tool, defaults or {})
    return tool


def instructions(
    status: IndexStatus, *, keyword: tuple[bool, str] = (True, ""), writable: bool = False
) -> str:
    """What a client shows the model: what the vault holds and which tool does what.

    Made as the server starts its first sync: it says what will happen from here (the notes
    read, words searchable as they are, meaning as passages are embedded), not a state that
    changes seconds later; `memory_status` and each answer's `indexing` tell how far."""
    embeddings = status.embeddings
    ready, _why = keyword
    if not status.indexed:
        held = (
            "nothing indexed yet: the notes are being read now, and search by exact words "
            "covers those read so far (every answer says how far; memory_status tells)"
        )
    elif ready:
        held = f"{status.files} notes in {status.chunks} passages; search by exact words works"
    else:
        held = (
            f"{status.files} notes in {status.chunks} passages; search by exact words covers "
            "those while this server brings the index up to date"
        )
    return _instructions_text(status, f"{held}; {_meaning(embeddings)}", writable)


def _meaning(embeddings: EmbeddingsState) -> str:
    """Search by meaning in words that hold from the server's start on."""
    state = embeddings.state
    if state == "ready":
        return "search by meaning works"
    if state in ("embedding", "rebuilding") or (
        state == "keyword-only" and embeddings.identity is not None
    ):
        # The provider works and vectors are missing: this server's sync embeds them.
        return (
            "search by meaning starts as passages are embedded, which this server does after "
            "reading the notes (memory_status tells how far); until then words find them"
        )
    reason = f" ({embeddings.reason})" if embeddings.reason else ""
    return f"search by meaning is {state}{reason}"


def _instructions_text(status: IndexStatus, state: str, writable: bool) -> str:
    return (
        f"Apus is the user's long-term memory: the Markdown notes of {status.vault} "
        f"({state}).\n"
        "- memory_search: find passages by meaning and exact words (names, IDs, error "
        "strings). Filter by path prefixes, dates (since/until: YYYY-MM-DD or words such as "
        "'last week', '7d'; a time in the query itself, 'what did I decide last week', is "
        "read as dates too) and tags. Cite results with their `citation`.\n"
        "- memory_get: read a note or a result's citation (path#L12-L30); long notes come in "
        "pages (call again with from=nextFrom).\n"
        "- memory_related: notes most like a given note.\n"
        "- memory_recall: curated entries of MEMORY.md / USER.md whose trigger phrases match "
        "the user's message; cheap enough for every turn.\n"
        "- memory_status: what is indexed and whether search by meaning works.\n"
        f"- sessions_search / sessions_history: {_transcripts_line(status)}\n"
        + (
            "- memory_write: append what you learn (a decision, a preference, a fact) to "
            "today's daily note, or durable facts to MEMORY.md / USER.md, with importance "
            "and trigger phrases; it is searchable as soon as the call returns.\n"
            if writable
            else ""
        )
        + "Search before answering questions about the user's past work, preferences or "
        "decisions; say so when memory has nothing on it."
    )


def _transcripts_line(status: IndexStatus) -> str:
    sessions = status.sessions
    if not sessions.enabled:
        return "earlier conversations are not indexed (the user has not turned them on)."
    return (
        f"exact search over {sessions.summary.files} earlier conversations, and the "
        'messages around a hit; memory_search with corpus "sessions" or "all" finds '
        "them by meaning."
    )


def serve(source: SettingsSource) -> None:
    """Run the server on stdin/stdout until the client disconnects."""
    _log_to_file_and_stderr()
    memory = Memory(source)
    # The SDK's stdio transport behind a screening reader (apus.agents.stdio): malformed
    # lines get JSON-RPC errors and replies still owed at EOF are written before exiting.
    anyio.run(run_stdio, build_server(memory))


def serve_http(
    source: SettingsSource, binding: Binding, *, on_ready: Callable[[str], None]
) -> None:
    """Run the server on Streamable HTTP at `binding` until SIGTERM or SIGINT; `on_ready`
    hears the URL once requests are served. A bind other machines can reach needs the
    bearer token (made by `apus mcp --token`): without one nothing starts."""
    from apus.agents import http_server
    from apus.agents.http_token import read_token

    token = None if binding.loopback else read_token()
    sock = http_server.listen(binding.host, binding.port)
    binding = replace(binding, port=sock.getsockname()[1])  # port 0: the one picked
    _log_to_file_and_stderr()
    memory = Memory(source)
    security = binding.security()
    app = build_server(memory).streamable_http_app(
        streamable_http_path=http_server.ENDPOINT,
        json_response=True,
        max_request_body_size=http_server.MAX_BODY_BYTES,
        session_idle_timeout=http_server.SESSION_IDLE_S,
        max_sessions=http_server.MAX_SESSIONS,
        transport_security=security,
        host=binding.host,
    )
    guard = http_server.Guard(app, security, token=token, on_ready=lambda: on_ready(binding.url))
    log.info("serving %s at %s", memory.vault, binding.url)
    http_server.run(guard, sock)


def _warm_up(memory: Memory) -> None:
    """Load the local model now, so the first search by meaning does not wait for it."""
    embedder = memory.provider.embedder
    if embedder is None or memory.provider.state != "semantic":
        return

    def load() -> None:
        try:
            embedder.embed([embedder.query_text("warm up")], kind="query")
        except Exception as exc:  # reported by status and by the first search instead
            log.warning("embedding warm-up failed: %s", exc)

    threading.Thread(target=load, name="apus-warm-up", daemon=True).start()


def _log_to_file_and_stderr() -> None:
    folder = paths.log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    to_file = logging.FileHandler(folder / "mcp.log", encoding="utf-8")
    to_file.setLevel(logging.INFO)
    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setLevel(logging.WARNING)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
        handlers=[to_file, to_stderr],
    )
