"""`apus hook claude-code`: trusted entries put in Claude Code's context, by one short process.

`UserPromptSubmit` gets the MEMORY.md / USER.md entries whose triggers the prompt matches, as
`memory_recall` finds them by their words; `SessionStart` gets USER.md's top entries (highest
importance first, then in the file's order). Each comes with its citation. Triggers are matched
by words only: a query embedding would start the local model or send the prompt to a hosted
provider, on every turn. The hook fails open: whatever goes wrong, Claude Code gets nothing
from it and the reason goes to `hook.log` in Apus's log folder.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apus.config import Settings
from apus.index.store import ChunkRecord, Store
from apus.paths import log_dir

MAX_ENTRIES = 3
# The whole context added to a turn: three entries of a 200-character snippet with their
# citations and triggers fit; anything past it is cut, so a turn never pays for more.
MAX_CONTEXT_CHARS = 1200
USER_FILE = "USER.md"


@dataclass(frozen=True)
class HookEntry:
    """One trusted passage as the hook shows it."""

    citation: str
    snippet: str
    trigger: str = ""


def answer(event: Mapping[str, Any], settings: Settings) -> dict[str, Any] | None:
    """The hook's output for one event, or None when it has nothing to add."""
    name = event.get("hook_event_name")
    if name not in ("UserPromptSubmit", "SessionStart"):
        return None
    index_dir = settings.index_dir()
    if not Store.exists(index_dir):
        log(f"{name}: no index for {settings.vault_path()} yet (run `apus memory index`)")
        return None
    store = Store(index_dir, readonly=True)
    try:
        if name == "UserPromptSubmit":
            prompt = event.get("prompt")
            entries = recalled(store, prompt) if isinstance(prompt, str) else []
            heading = "Apus memory: trusted entries that match this message"
        else:
            entries = top_user_entries(store)
            heading = "Apus memory: the user's own notes (USER.md)"
    finally:
        store.close()
    if not entries:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": name,
            "additionalContext": context_text(heading, entries),
        }
    }


def recalled(store: Store, prompt: str) -> list[HookEntry]:
    from apus.search.recall import recall

    return [
        HookEntry(f"{e.path}#L{e.start_line}-L{e.end_line}", e.snippet, e.trigger)
        for e in recall(store, prompt, embedder=None)
    ]


def top_user_entries(store: Store) -> list[HookEntry]:
    """USER.md's passages by importance (an entry's annotation, else the note's), then order."""
    from apus.search.snippet import make_snippet
    from apus.vault.annotations import annotations_in, without_annotations

    record = store.file_by_path(USER_FILE)
    if record is None:
        return []
    chunks = list(store.iter_chunks([record.id]))

    def weight(chunk: ChunkRecord) -> float:
        own = annotations_in(chunk.text).importance
        return own if own is not None else (chunk.importance or 5.0)

    ranked = sorted(chunks, key=lambda chunk: (-weight(chunk), chunk.ordinal))
    entries = []
    for chunk in ranked:
        text = without_annotations(chunk.text).strip()
        if text:
            snippet = make_snippet(text, frozenset(), width=200).text
            entries.append(
                HookEntry(f"{chunk.path}#L{chunk.start_line}-L{chunk.end_line}", snippet)
            )
        if len(entries) == MAX_ENTRIES:
            break
    return entries


def context_text(heading: str, entries: list[HookEntry]) -> str:
    """One line a passage, citation first, held to MAX_CONTEXT_CHARS."""
    lines = [f"{heading} (read more with memory_get on the citation):"]
    for entry in entries[:MAX_ENTRIES]:
        trigger = f" (trigger: {entry.trigger})" if entry.trigger else ""
        lines.append(f"- {entry.citation}{trigger}: {' '.join(entry.snippet.split())}")
    text = "\n".join(lines)
    return text if len(text) <= MAX_CONTEXT_CHARS else text[: MAX_CONTEXT_CHARS - 1] + "…"


def read_event(raw: str) -> dict[str, Any]:
    event = json.loads(raw)
    if not isinstance(event, dict):
        raise ValueError("the hook's input is not a JSON object")
    return event


def log(message: str) -> None:
    """A line in hook.log; the hook's own output is for Claude Code only."""
    try:
        folder = log_dir()
        folder.mkdir(parents=True, exist_ok=True)
        with Path(folder / "hook.log").open("a", encoding="utf-8") as out:
            out.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n")
    except OSError:
        pass  # nowhere to say it: the hook still fails open
