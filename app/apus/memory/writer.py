"""Appending an agent's entry to a memory note: today's daily note, MEMORY.md or USER.md.

This is the one place Apus writes to a vault, and it only appends: existing text is never
rewritten, moved or deleted. Three files can be written, all inside the vault itself:
`memory/YYYY-MM-DD.md` (today's, created with a heading when missing), `MEMORY.md` and
`USER.md`. A target that is a symlink, or whose folder resolves outside the vault, is
refused.

Two writers (two agent servers, or the CLI and a server) take a lock beside the index, so
their entries follow one another. An editor does not take that lock: each entry goes out in
one `write` on a file opened for appending, so the system puts it whole at the end of the
file as it is at that moment, after anything the editor appended; the tail is re-read just
before, so the entry starts on a line of its own. Afterwards the file is read back, and an
entry that is not there (the editor saved over it) is an error, not a silent loss.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from filelock import FileLock, Timeout

from apus.config import Settings
from apus.errors import ApusError
from apus.vault.annotations import IMPORTANCE_RANGE, TRIGGER_SEPARATOR, annotation_lines
from apus.vault.scan import is_note_name

Target = Literal["daily", "MEMORY.md", "USER.md"]
TARGETS: tuple[Target, ...] = ("daily", "MEMORY.md", "USER.md")
DAILY_FOLDER = "memory"
# Another writer holds the lock longer than this: something is stuck; say so.
LOCK_TIMEOUT_S = 30.0
MAX_TRIGGERS = 10
MAX_TRIGGER_CHARS = 100


class WriteRefusedError(ApusError):
    """An entry that is not written (writing is off, bad target, too long, unsafe file)."""


@dataclass(frozen=True)
class Entry:
    text: str
    target: Target = "daily"
    importance: int | None = None
    triggers: tuple[str, ...] = ()


@dataclass(frozen=True)
class WrittenEntry:
    path: str  # vault-relative
    start_line: int  # the entry's first line (its heading) and last line, 1-based
    end_line: int
    created: bool  # the daily note did not exist before

    @property
    def citation(self) -> str:
        return f"{self.path}#L{self.start_line}-L{self.end_line}"


def target_path(target: str, today: dt.date) -> str:
    """The vault-relative note a target names."""
    if target == "daily":
        return f"{DAILY_FOLDER}/{today.isoformat()}.md"
    if target in ("MEMORY.md", "USER.md"):
        return target
    raise WriteRefusedError(
        f"{target!r} is not a memory note the write tool may append to.",
        fix='pass target "daily" (today\'s note), "MEMORY.md" or "USER.md"',
    )


def check_entry(settings: Settings, entry: Entry) -> None:
    """Everything about an entry that can be refused before a file is touched."""
    if not settings.memory.write.enabled:
        raise WriteRefusedError(
            "Writing to memory is off.",
            fix="turn it on with memory.write.enabled = true (APUS_MEMORY__WRITE__ENABLED=true) "
            "or `apus mcp --writable`",
        )
    text = entry.text.strip()
    if not text:
        raise WriteRefusedError("The entry is empty.", fix="pass the text to remember")
    limit = settings.memory.write.max_entry_chars
    if len(text) > limit:
        raise WriteRefusedError(
            f"The entry is {len(text):,} characters; one entry holds at most {limit:,}.",
            fix="write the fact in fewer words, or as several entries",
        )
    if "<!--" in text or "-->" in text:
        raise WriteRefusedError(
            "The entry holds an HTML comment marker (<!-- or -->), which would change its "
            "annotations.",
            fix="pass importance and triggers as arguments, and the text without comments",
        )
    low, high = IMPORTANCE_RANGE
    if entry.importance is not None and not low <= entry.importance <= high:
        raise WriteRefusedError(
            f"importance {entry.importance} is outside {low}..{high}.",
            fix=f"pass a whole number from {low} (minor) to {high} (essential)",
        )
    if len(entry.triggers) > MAX_TRIGGERS:
        raise WriteRefusedError(
            f"{len(entry.triggers)} triggers; an entry takes at most {MAX_TRIGGERS}.",
            fix="keep the phrases a user would really say",
        )
    for trigger in entry.triggers:
        bad = not trigger.strip() or len(trigger) > MAX_TRIGGER_CHARS
        if bad or any(mark in trigger for mark in (TRIGGER_SEPARATOR, "\n", "<!--", "-->")):
            raise WriteRefusedError(
                f"The trigger {trigger[:60]!r} cannot be written.",
                fix=f"pass short phrases (at most {MAX_TRIGGER_CHARS} characters) without "
                f"{TRIGGER_SEPARATOR!r}, line breaks or comment markers",
            )
    target_path(entry.target, dt.date(2000, 1, 1))


def append_entry(
    settings: Settings, lock_dir: Path, entry: Entry, now: dt.datetime
) -> WrittenEntry:
    """Append `entry` to its note (under the writers' lock) and return where it landed."""
    check_entry(settings, entry)
    vault = Path(os.path.realpath(settings.vault_path()))
    rel_path = target_path(entry.target, now.date())
    path = _safe_target(vault, rel_path)
    lock_dir.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(lock_dir / "memory-write.lock"), timeout=LOCK_TIMEOUT_S):
            return _append(path, rel_path, entry, now)
    except Timeout:
        raise WriteRefusedError(
            f"Another writer has held the memory write lock for {LOCK_TIMEOUT_S:.0f} s.",
            fix="try again; if it persists, stop the other `apus` process",
        ) from None


def _safe_target(vault: Path, rel_path: str) -> Path:
    """The file to append to, refused when it (or its folder) leaves the vault, is a
    symlink, or is not a Markdown note."""
    path = vault / rel_path
    if not is_note_name(path.name):
        raise WriteRefusedError(f"{rel_path} is not a Markdown note.", fix="write to a .md note")
    folder = path.parent
    if folder != vault:
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise WriteRefusedError(
                f"{folder.relative_to(vault)}/ is a link or not a folder; entries are written "
                "only to real files inside the vault.",
                fix=f"make {DAILY_FOLDER}/ a plain folder of the vault",
            )
        folder.mkdir(exist_ok=True)
    real_folder = Path(os.path.realpath(folder))
    if real_folder != vault and not real_folder.is_relative_to(vault):
        raise WriteRefusedError(
            f"{rel_path} resolves outside the vault; it is not written.",
            fix="keep the memory notes inside the vault",
        )
    if path.is_symlink():
        raise WriteRefusedError(
            f"{rel_path} is a symlink; entries are written only to real files in the vault.",
            fix=f"replace the link with the note itself, or use a target other than {rel_path}",
        )
    return path


def _append(path: Path, rel_path: str, entry: Entry, now: dt.datetime) -> WrittenEntry:
    daily = rel_path.startswith(DAILY_FOLDER + "/")
    created = _create_daily(path, now.date()) if daily else False
    # The daily note's name holds the day; MEMORY.md and USER.md keep entries of many days.
    stamp = now.strftime("%H:%M" if daily else "%Y-%m-%d %H:%M")
    body = [
        f"## {stamp}",
        *annotation_lines(entry.importance, entry.triggers),
        *entry.text.strip().splitlines(),
    ]
    # O_NOFOLLOW: a link put in place since the checks is refused, not followed.
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WriteRefusedError(f"{rel_path} is not a regular file.", fix="write elsewhere")
        lead = _separator(fd)
        data = (lead + "\n".join(body) + "\n").encode("utf-8")
        written = os.write(fd, data)  # one write: appended whole, after anything else
        if written != len(data):
            raise WriteRefusedError(
                f"Only {written} of {len(data)} bytes reached {rel_path} (is the disk full?).",
                fix="free space, then check the end of the note",
            )
        os.fsync(fd)
    finally:
        os.close(fd)
    return _located(path, rel_path, data.decode("utf-8"), lead, len(body), created)


def _create_daily(path: Path, day: dt.date) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as note:
        note.write(f"# {day.isoformat()}\n")
    return True


def _separator(fd: int) -> str:
    """What goes before the entry so that it starts after a blank line: the file's tail,
    read just before the write."""
    size = os.fstat(fd).st_size
    if size == 0:
        return ""
    tail = os.pread(fd, 2, max(0, size - 2))
    if tail.endswith(b"\n\n"):
        return ""
    return "\n" if tail.endswith(b"\n") else "\n\n"


def _located(
    path: Path, rel_path: str, data: str, lead: str, lines: int, created: bool
) -> WrittenEntry:
    """Where the entry is now, read back from the file: it must be there, whole."""
    text = path.read_text(encoding="utf-8", errors="replace")
    entry_text = data[len(lead) :]
    at = text.rfind(entry_text)
    if at < 0:
        raise WriteRefusedError(
            f"The entry was appended to {rel_path}, but another program saved the note over it "
            "at the same moment: it is not in the note now.",
            fix="write the entry again",
        )
    start = text.count("\n", 0, at) + 1
    return WrittenEntry(rel_path, start, start + lines - 1, created)
