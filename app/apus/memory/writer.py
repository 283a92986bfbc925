"""Appending an agent's entry to a memory note: today's daily note, MEMORY.md or USER.md.

This is the one place Apus writes to a vault, and it only appends: existing text is never
rewritten, moved or deleted. Three files can be written, all inside the vault itself:
`memory/YYYY-MM-DD.md` (today's, made with its heading and the entry in one step when
missing), `MEMORY.md` and `USER.md`. The entry must be text the index reads as text (no NUL
or other control characters, no lone surrogates).

Writers (agent servers, the CLI, each request of an HTTP server) take turns at a fair lock
beside the index (`apus.fair_lock`), and everything about the target is checked under it: the
note is opened through folder descriptors from the vault root down (`note_files.py`), so a
folder or note that is a link, or a note with a second hard link, is refused, and the checks
hold for the file written. An editor does not take the lock: each entry goes out in one
`write` on a file opened for appending, so the system puts it whole at the end of the file as
it is at that moment, after anything the editor appended; the tail is re-read just before, so
the entry starts on a line of its own. A write the disk cuts short is taken out again (the
note is truncated back to its size before), so a full disk leaves the note as it was.
Afterwards the entry is read back through the same descriptor, and if the note's name now
holds another file (an editor saved over it) without the entry, that is an error, not a
silent loss.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from apus.config import Settings
from apus.fair_lock import FairLock, LockTimeout
from apus.memory.note_files import NoteFolder, WriteRefusedError, write_error, write_whole
from apus.vault.annotations import IMPORTANCE_RANGE, TRIGGER_SEPARATOR, annotation_lines

Target = Literal["daily", "MEMORY.md", "USER.md"]
TARGETS: tuple[Target, ...] = ("daily", "MEMORY.md", "USER.md")
DAILY_FOLDER = "memory"
# Writers ahead in the queue hold the lock longer than this: something is stuck; say so.
LOCK_TIMEOUT_S = 30.0
LOCK_FOLDER = "memory-write.queue"
MAX_TRIGGERS = 10
MAX_TRIGGER_CHARS = 100
# What a note cannot hold as text: C0 controls but tab, line feed and carriage return (a NUL
# makes the scanner take the note for a binary file), DEL, and lone surrogates (not UTF-8).
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


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
    created: bool  # the note did not exist before

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
    _check_text(text, "entry")
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
        _check_text(trigger, "trigger")
        bad = not trigger.strip() or len(trigger) > MAX_TRIGGER_CHARS
        if bad or any(mark in trigger for mark in (TRIGGER_SEPARATOR, "\n", "<!--", "-->")):
            raise WriteRefusedError(
                f"The trigger {trigger[:60]!r} cannot be written.",
                fix=f"pass short phrases (at most {MAX_TRIGGER_CHARS} characters) without "
                f"{TRIGGER_SEPARATOR!r}, line breaks or comment markers",
            )
    target_path(entry.target, dt.date(2000, 1, 1))


def _check_text(text: str, what: str) -> None:
    found = _NOT_TEXT.search(text)
    if found is None:
        return
    char = found.group()
    kind = "a lone surrogate" if "\ud800" <= char <= "\udfff" else "a control character"
    why = ", which would make the note read as a binary file" if char == "\x00" else ""
    raise WriteRefusedError(
        f"The {what} holds {kind} (U+{ord(char):04X}) at character {found.start() + 1}{why}.",
        fix="pass plain text: letters, digits, punctuation, tabs and line breaks",
    )


def append_entry(
    settings: Settings, lock_dir: Path, entry: Entry, now: dt.datetime
) -> WrittenEntry:
    """Append `entry` to its note (in its turn among the writers) and return where it
    landed."""
    check_entry(settings, entry)
    vault = Path(os.path.realpath(settings.vault_path()))
    rel_path = target_path(entry.target, now.date())
    *folders, name = rel_path.split("/")
    lock = FairLock(lock_dir / LOCK_FOLDER, timeout=LOCK_TIMEOUT_S)
    try:
        lock.acquire()
    except LockTimeout:
        raise WriteRefusedError(
            f"Other writers have held the memory write lock for {LOCK_TIMEOUT_S:.0f} s.",
            fix="try again; if it persists, stop the other `apus` processes",
        ) from None
    except OSError as exc:
        raise write_error(f"the write lock in {lock_dir}", exc) from exc
    try:
        with _opened(vault, tuple(folders)) as folder:
            return _append(folder, name, rel_path, entry, now)
    finally:
        lock.release()


def _opened(vault: Path, folders: tuple[str, ...]) -> NoteFolder:
    try:
        return NoteFolder(vault, folders, make=True)
    except OSError as exc:
        raise write_error(f"{vault}", exc) from exc


def _append(
    folder: NoteFolder, name: str, rel_path: str, entry: Entry, now: dt.datetime
) -> WrittenEntry:
    daily = rel_path.startswith(DAILY_FOLDER + "/")
    # The daily note's name holds the day; MEMORY.md and USER.md keep entries of many days.
    stamp = now.strftime("%H:%M" if daily else "%Y-%m-%d %H:%M")
    body = [
        f"## {stamp}",
        *annotation_lines(entry.importance, entry.triggers),
        *entry.text.strip().splitlines(),
    ]
    text = "\n".join(body) + "\n"
    fd = folder.open_note(name)
    if fd is None:
        heading = f"# {now.date().isoformat()}\n\n" if daily else ""
        try:
            made = folder.create_note(name, (heading + text).encode("utf-8"))
        except WriteRefusedError:
            folder.forget_made_folder()
            raise
        except OSError as exc:
            folder.forget_made_folder()
            raise write_error(rel_path, exc) from exc
        if made:
            first = heading.count("\n") + 1
            return WrittenEntry(rel_path, first, first + len(body) - 1, created=True)
        fd = folder.open_note(name)  # another writer (an editor) made it meanwhile
        if fd is None:
            raise WriteRefusedError(
                f"{rel_path} appeared and vanished while the entry was written; it is not written.",
                fix="write the entry again",
            )
    try:
        return _append_to(folder, fd, name, rel_path, text, len(body))
    finally:
        os.close(fd)


def _append_to(
    folder: NoteFolder, fd: int, name: str, rel_path: str, text: str, lines: int
) -> WrittenEntry:
    size = os.fstat(fd).st_size
    lead = _separator(fd, size)
    data = (lead + text).encode("utf-8")
    try:
        write_whole(fd, data, rel_path)  # one write: appended whole, after anything else
        os.fsync(fd)
    except (WriteRefusedError, OSError) as exc:
        _take_back(fd, size, data)
        if isinstance(exc, OSError):
            raise write_error(rel_path, exc) from exc
        raise
    end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: where this write ended
    start = end - len(data)
    return _located(folder, fd, name, rel_path, start, data, lead, lines)


def _take_back(fd: int, size: int, data: bytes) -> None:
    """Truncate the note back to `size`, its size before a write that failed, when what
    follows is that write's beginning (the writers' lock is held; an editor's text appended
    meanwhile is never cut)."""
    grown = os.fstat(fd).st_size - size
    if 0 < grown <= len(data) and os.pread(fd, grown, size) == data[:grown]:
        os.ftruncate(fd, size)


def _separator(fd: int, size: int) -> str:
    """What goes before the entry so that it starts after a blank line: the file's tail,
    read just before the write."""
    if size == 0:
        return ""
    tail = os.pread(fd, 2, max(0, size - 2))
    if tail.endswith(b"\n\n"):
        return ""
    return "\n" if tail.endswith(b"\n") else "\n\n"


def _located(
    folder: NoteFolder,
    fd: int,
    name: str,
    rel_path: str,
    start: int,
    data: bytes,
    lead: str,
    lines: int,
) -> WrittenEntry:
    """Where the entry is now: read back through the descriptor written to, and the note's
    name must still hold that file, or another one holding the entry."""
    info = os.fstat(fd)
    written = os.pread(fd, start + len(data), 0)
    entry = data[len(lead.encode("utf-8")) :]
    if written[start:] == data and folder.identity(name) == (info.st_dev, info.st_ino):
        first = written.count(b"\n", 0, start + len(lead)) + 1
        return WrittenEntry(rel_path, first, first + lines - 1, created=False)
    # Saved over by an editor (replaced, or rewritten in place): is the entry in it?
    now = folder.read(name) or b""
    at = now.rfind(entry)
    if at < 0:
        raise WriteRefusedError(
            f"The entry was appended to {rel_path}, but another program saved the note over it "
            "at the same moment: it is not in the note now.",
            fix="write the entry again",
        )
    first = now.count(b"\n", 0, at) + 1
    return WrittenEntry(rel_path, first, first + lines - 1, created=False)
