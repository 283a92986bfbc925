"""Where transcripts are and whose format each is in: the configured roots, Claude Code's and
Codex's own folders; the files found there (only stat() is called on them) and their readers.

- configured roots (`memory.search.sessions.paths`): `<root>/<agentId>/sessions/<id>.jsonl`;
- Claude Code (`<CLAUDE_CONFIG_DIR or ~/.claude>/projects`): `<project>/<session>.jsonl`, its
  subagents in `<project>/<session>/subagents/agent-<id>.jsonl` (older versions:
  `<project>/agent-<id>.jsonl`); the agent is `claude-code:<project>`. Its helper agents
  (compaction and the like, `agent-a<kind>-<id>.jsonl`) hold no conversation and are left out;
- Codex (`<CODEX_HOME or ~/.codex>/sessions` and `archived_sessions`): `rollout-<time>-<id>
  .jsonl` at any depth (`YYYY/MM/DD/`); the agent is `codex`.

A client's folder that does not exist is simply empty. A session key is `<agent>/<session>`,
the session taken from the file name (the id the client gave it).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from apus import paths
from apus.config import Settings
from apus.vault import transcripts as tx
from apus.vault.claude_code_transcripts import ClaudeCodeLines
from apus.vault.codex_transcripts import CodexLines

PATHS, CLAUDE_CODE, CODEX = "paths", "claude-code", "codex"
# Agent ids of Claude Code's own helpers: a kind, then an id (`acompact-e1f845`); a subagent's
# id has no dash.
_HELPER_AGENT = re.compile(r"agent-a[a-z_]+-[0-9a-z]+")
# A Codex rollout's file name ends in the session's id.
_CODEX_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_AGENT_PREFIX = "agent-"


@dataclass(frozen=True)
class TranscriptSource:
    """A folder of transcripts in one client's layout."""

    client: str  # PATHS, CLAUDE_CODE or CODEX
    root: Path


def sources(settings: Settings) -> list[TranscriptSource]:
    """The configured roots, then the folders of the clients named in
    `memory.search.sessions.clients`."""
    sessions = settings.search.sessions
    found = [TranscriptSource(PATHS, root) for root in _configured(settings)]
    if CLAUDE_CODE in sessions.clients:
        found.append(TranscriptSource(CLAUDE_CODE, paths.claude_code_dir() / "projects"))
    if CODEX in sessions.clients:
        home = paths.codex_home()
        found.append(TranscriptSource(CODEX, home / "sessions"))
        found.append(TranscriptSource(CODEX, home / "archived_sessions"))
    return found


def _configured(settings: Settings) -> list[Path]:
    """The configured roots, absolute (relative ones are taken from the vault)."""
    paths_ = settings.search.sessions.paths
    if not paths_:
        return []
    base = settings.vault_path()
    return [(base / Path(p).expanduser()).resolve() for p in paths_]


def client_of_agent(agent: str) -> str:
    """Which source a session's agent comes from, by how each names its agents."""
    if agent.startswith(CLAUDE_CODE + ":"):
        return CLAUDE_CODE
    return CODEX if agent == CODEX else PATHS


def reader_for(transcript: tx.TranscriptFile, tool_calls: bool) -> tx.LineReader:
    """The line reader of a transcript's format."""
    if transcript.client == CLAUDE_CODE:
        subagent = Path(transcript.session).name.startswith(_AGENT_PREFIX)
        return ClaudeCodeLines(transcript.agent, subagent=subagent, tool_calls=tool_calls)
    if transcript.client == CODEX:
        return CodexLines(transcript.agent, tool_calls=tool_calls)
    return tx.AgentLines(transcript.agent, tool_calls=tool_calls)


# -- finding them ---------------------------------------------------------------------------


def find_transcripts(
    found_in: Sequence[TranscriptSource], cancel: threading.Event | None = None
) -> tuple[list[tx.TranscriptFile], list[tuple[str, str]]]:
    """Every transcript in `found_in`, and (store path, reason) for those that cannot be read.
    A session key found twice is taken from the first source (and file) that has it."""
    found: dict[str, tx.TranscriptFile] = {}
    problems: list[tuple[str, str]] = []
    for source in found_in:
        for agent, session, entry in _layout(source):
            if cancel is not None and cancel.is_set():
                return sorted(found.values(), key=lambda t: t.key), problems
            key = f"{agent}/{session}"
            if key in found:
                continue
            try:
                if not entry.is_file():
                    continue
                info = entry.stat()
            except OSError as exc:
                problems.append((tx.store_path(key), (exc.strerror or str(exc)).lower()))
                continue
            found[key] = tx.TranscriptFile(
                Path(entry.path), agent, session, info.st_size, info.st_mtime_ns, source.client
            )
    return sorted(found.values(), key=lambda t: t.key), problems


Candidate = tuple[str, str, os.DirEntry[str]]  # agent, session, the file's entry


def _layout(source: TranscriptSource) -> Iterator[Candidate]:
    if source.client == CLAUDE_CODE:
        return _claude_code(source.root)
    if source.client == CODEX:
        return _codex(source.root)
    return _agent_folders(source.root)


def _agent_folders(root: Path) -> Iterator[Candidate]:
    """`<root>/<agent>/sessions/<session>.jsonl`."""
    for agent_dir in _folders(root):
        for entry in _jsonl(Path(agent_dir.path) / "sessions"):
            yield agent_dir.name, _stem(entry), entry


def _claude_code(root: Path) -> Iterator[Candidate]:
    """`<project>/<session>.jsonl`, `<project>/agent-<id>.jsonl` and
    `<project>/<session>/subagents/**/agent-<id>.jsonl`."""
    for project in _folders(root):
        agent = f"{CLAUDE_CODE}:{project.name}"
        for entry in _jsonl(Path(project.path)):
            if not _helper(entry):
                yield agent, _stem(entry), entry
        for session in _folders(Path(project.path)):
            for entry in _tree(Path(session.path) / "subagents"):
                if entry.name.startswith(_AGENT_PREFIX) and not _helper(entry):
                    yield agent, f"{session.name}/{_stem(entry)}", entry


def _codex(root: Path) -> Iterator[Candidate]:
    """`rollout-<time>-<id>.jsonl` at any depth; the session is the id."""
    for entry in _tree(root):
        stem = _stem(entry)
        if stem.startswith("rollout-"):
            found = _CODEX_ID.search(stem)
            yield CODEX, found.group(0) if found else stem[len("rollout-") :], entry


def _helper(entry: os.DirEntry[str]) -> bool:
    return _HELPER_AGENT.fullmatch(_stem(entry)) is not None


def _stem(entry: os.DirEntry[str]) -> str:
    return entry.name[: -len(tx.SUFFIX)]


def _jsonl(folder: Path) -> list[os.DirEntry[str]]:
    """The visible `.jsonl` entries of a folder."""
    return [
        e for e in _entries(folder) if e.name.endswith(tx.SUFFIX) and not e.name.startswith(".")
    ]


def _tree(folder: Path) -> Iterator[os.DirEntry[str]]:
    """The visible `.jsonl` entries of a folder and of the visible folders inside it."""
    yield from _jsonl(folder)
    for inner in _folders(folder, follow_symlinks=False):  # a linked folder could loop
        yield from _tree(Path(inner.path))


def _folders(root: Path, *, follow_symlinks: bool = True) -> list[os.DirEntry[str]]:
    return [e for e in _entries(root) if not e.name.startswith(".") and _is_dir(e, follow_symlinks)]


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as listing:
            return sorted(listing, key=lambda e: e.name)
    except OSError:  # missing, not a folder, unreadable: nothing to index there
        return []


def _is_dir(entry: os.DirEntry[str], follow_symlinks: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow_symlinks)
    except OSError:
        return False
