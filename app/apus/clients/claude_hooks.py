"""Apus's hooks in Claude Code's `settings.json`: recall on each prompt, USER.md at each start.

Claude Code runs every hook of an event, from every matcher group, so Apus adds a group of its
own to `UserPromptSubmit` and `SessionStart` and leaves the others as they are. Its hook is
recognised by its command (`apus … hook claude-code`), so a moved installation is updated,
not added twice.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from apus.clients.config_file import unreadable
from apus.clients.connect import Edit
from apus.clients.jsonc import JsonDocument, JsonSyntaxError
from apus.clients.launch import runs_apus

EVENTS = ("UserPromptSubmit", "SessionStart")
# Seconds Claude Code waits for the hook. The hook answers in about a tenth of a second
# (`apus bench hook`); the margin is for a cold disk, and a hook that runs out is skipped.
TIMEOUT_S = 10


def is_apus_hook(command: Any) -> bool:
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    pairs = [words[i : i + 2] for i in range(len(words) - 1)]
    return bool(words) and ["hook", "claude-code"] in pairs and runs_apus(words[0], words[1:])


def has_apus_hooks(text: str | None) -> bool:
    """Whether a settings text already runs Apus's hook for some event."""
    try:
        document = JsonDocument(text or "", comments=False)
    except JsonSyntaxError:
        return False
    return any(_find(document.get(["hooks", event]) or []) for event in EVENTS)


def plan_hooks(settings: Path, command: str | None) -> Edit:
    """The settings file with Apus's hooks running `command` (None: without them)."""
    try:
        before: str | None = settings.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(settings, f"cannot be read ({exc})") from None
    text = before or ""
    for event in EVENTS:
        text = _event_with(settings, text, event, command)
    if command is None and text != (before or "") and _parse(settings, text).get(["hooks"]) == {}:
        text = _parse(settings, text).remove(["hooks"])  # nothing left but what Apus made
    return Edit(settings, before, text)


def _parse(settings: Path, text: str) -> JsonDocument:
    try:
        document = JsonDocument(text, comments=False)
    except JsonSyntaxError as exc:
        raise unreadable(settings, f"is not valid JSON ({exc})") from None
    if not isinstance(document.data, dict):
        raise unreadable(settings, "does not hold a JSON object")
    hooks = document.get(["hooks"])
    if hooks is not None and not isinstance(hooks, dict):
        raise unreadable(settings, "has a `hooks` that is not an object")
    return document


def _event_with(settings: Path, text: str, event: str, command: str | None) -> str:
    document = _parse(settings, text)
    groups = document.get(["hooks", event])
    if groups is not None and not isinstance(groups, list):
        raise unreadable(settings, f"has a `hooks.{event}` that is not a list")
    found = _find(groups or [])
    if command is None:
        # Backwards, so the positions found stay valid as hooks are taken out.
        for group, index in reversed(found):
            document = _parse(settings, text)
            hooks = document.get(["hooks", event, group, "hooks"])
            path: list[str | int] = ["hooks", event, group]
            text = document.remove([*path, "hooks", index] if len(hooks) > 1 else path)
        if found and not _parse(settings, text).get(["hooks", event]):
            text = _parse(settings, text).remove(["hooks", event])
        return text
    if found:
        group, index = found[0]
        if document.get(["hooks", event, group, "hooks", index, "command"]) == command:
            return text
        return document.set(["hooks", event, group, "hooks", index, "command"], command)
    ours = {"hooks": [{"type": "command", "command": command, "timeout": TIMEOUT_S}]}
    if groups is None:
        return document.set(["hooks", event], [ours])
    return document.append(["hooks", event], ours)


def _find(groups: Any) -> list[tuple[int, int]]:
    """(group, hook) positions of Apus's hooks among an event's matcher groups."""
    found: list[tuple[int, int]] = []
    if not isinstance(groups, list):
        return found
    for group_index, group in enumerate(groups):
        hooks = group.get("hooks") if isinstance(group, dict) else None
        for hook_index, hook in enumerate(hooks if isinstance(hooks, list) else []):
            if isinstance(hook, dict) and is_apus_hook(hook.get("command")):
                found.append((group_index, hook_index))
    return found
