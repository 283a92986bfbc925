"""Walk the vault roots: ignore rules, size guard, symlink safety, reading with replacement."""

from __future__ import annotations

import dataclasses
import errno
import fnmatch
import hashlib
import os
import re
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from apus.units import human_size

NOTE_SUFFIXES = (".md", ".markdown")
DEFAULT_MAX_FILE_BYTES = 5 * 1024 * 1024
IGNORE_FILE = ".apusignore"
# Never notes, and often huge: skipped even when not hidden.
IGNORED_NAMES = frozenset({".git", "node_modules"})
PROGRESS_EVERY = 500
# A NUL byte this early means a binary file; UTF-8 text never contains one.
_BINARY_SNIFF_BYTES = 8192
_UTF8_BOM = b"\xef\xbb\xbf"
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


@dataclass(frozen=True)
class ScannedFile:
    """A candidate note found by the walk; only stat() was called on it."""

    rel_path: str  # relative to the vault root, '/'-separated ("../x/y.md" for extraPaths outside)
    abs_path: Path
    size: int
    mtime_ns: int
    # (st_dev, st_ino) of the file the scan approved: reading checks it is still that file.
    identity: tuple[int, int] | None = None


@dataclass(frozen=True)
class SkippedFile:
    rel_path: str
    reason: str  # short and human: "larger than 5.0 MB", "binary file", "permission denied", ...


@dataclass
class ScanResult:
    files: list[ScannedFile]
    skipped: list[SkippedFile]


@dataclass(frozen=True)
class NoteText:
    """The decoded content of a note file, or why it cannot be used."""

    text: str | None  # None when skipped
    sha256: str  # of the raw bytes ("" when unreadable)
    skip_reason: str | None = None
    replaced_invalid_utf8: bool = False


class ScanCancelled(Exception):
    """The walk was stopped through its cancel event."""


def is_note_name(name: str) -> bool:
    """True for file names with a note suffix (.md, .markdown, any case)."""
    return name.lower().endswith(NOTE_SUFFIXES)


def printable_name(name: str) -> str:
    """A file name as text that can be stored and shown: bytes that are not UTF-8 (which
    os.scandir hands over as lone surrogates) become `\\xNN` escapes."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _too_large(size: int, limit: int) -> str:
    return f"larger than {human_size(limit)} limit ({human_size(size)})"


def _os_reason(error: OSError) -> str:
    """A short reason for an OSError, without the path (the caller shows it)."""
    if isinstance(error, PermissionError):
        return "permission denied"
    if isinstance(error, FileNotFoundError):
        return "not found"
    if error.errno == errno.ELOOP:
        return "symlink loop"
    return (error.strerror or type(error).__name__).lower()


def _compile(patterns: list[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in patterns))


@dataclass(frozen=True)
class IgnoreRules:
    """Patterns from `.apusignore`: gitignore-like, matched with fnmatch.

    A pattern without '/' matches a name at any depth or the whole relative path; one with
    a '/' (a leading '/' only anchors it) matches the whole relative path; a trailing '/'
    limits it to folders. Negation ('!') is not supported: such lines are ignored.
    """

    # Each fnmatch pattern is compiled into one of these: checked against the relative
    # path, or also against the name, for every entry or for folders only.
    paths: re.Pattern[str] | None = None
    names: re.Pattern[str] | None = None
    dir_paths: re.Pattern[str] | None = None
    dir_names: re.Pattern[str] | None = None

    @classmethod
    def parse(cls, source: str) -> IgnoreRules:
        groups: dict[tuple[bool, bool], list[str]] = {
            (path_only, dirs_only): [] for path_only in (True, False) for dirs_only in (True, False)
        }
        for raw in source.splitlines():
            line = raw.strip()
            if not line or line.startswith(("#", "!")):
                continue
            dirs_only = line.endswith("/")
            line = line.rstrip("/")
            path_only = "/" in line
            line = line.lstrip("/")
            if line:
                groups[path_only, dirs_only].append(line)
        return cls(
            paths=_compile(groups[True, False] + groups[False, False]),
            names=_compile(groups[False, False]),
            dir_paths=_compile(groups[True, True] + groups[False, True]),
            dir_names=_compile(groups[False, True]),
        )

    @classmethod
    def load(cls, vault: Path) -> IgnoreRules:
        try:
            source = (vault / IGNORE_FILE).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return cls()
        return cls.parse(source)

    def ignores(self, rel_path: str, name: str, *, is_dir: bool) -> bool:
        checks = [(self.paths, rel_path), (self.names, name)]
        if is_dir:
            checks += [(self.dir_paths, rel_path), (self.dir_names, name)]
        return any(rule is not None and rule.match(text) for rule, text in checks)


def _join(rel_dir: str, name: str) -> str:
    return f"{rel_dir}/{name}" if rel_dir else name


def _within(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


@dataclass(frozen=True)
class MediaRule:
    """Which non-note files a scan also lists: these suffixes, under these roots only."""

    suffixes: frozenset[str]  # lower case, with the dot
    roots: tuple[str, ...] = ()  # filled in by scan_roots: the extra roots, as given and real


@dataclass(frozen=True)
class _Found:
    file: ScannedFile
    via_symlink: bool


@dataclass
class _Walk:
    """State of one scan: roots, ignore rules, what was found and what was skipped."""

    vault: str
    roots: list[str]
    rules: IgnoreRules
    max_file_bytes: int
    cancel: threading.Event | None
    on_progress: Callable[[int], None] | None
    # Images and audio are found only under the extra roots (the vault stays notes-only).
    media: MediaRule | None = None
    found: list[_Found] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    visited_dirs: set[tuple[int, int]] = field(default_factory=set)
    deferred: list[tuple[str, str, int | None]] = field(default_factory=list)
    # Stay on each root's device: a folder on another one (a mount inside the vault) is
    # skipped, listed once, and never walked, unless the setting says to cross.
    cross_devices: bool = False

    def check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise ScanCancelled("scan cancelled")

    def add_file(self, rel_path: str, path: str, st: os.stat_result, *, via_symlink: bool) -> None:
        # Images and audio have the service's limits instead, which their embedder checks.
        if st.st_size > self.max_file_bytes and not self.is_media(path):
            self.skipped.append(SkippedFile(rel_path, _too_large(st.st_size, self.max_file_bytes)))
            return
        scanned = ScannedFile(
            rel_path, Path(path), st.st_size, st.st_mtime_ns, (st.st_dev, st.st_ino)
        )
        self.found.append(_Found(scanned, via_symlink))
        if len(self.found) % PROGRESS_EVERY == 0:
            if self.on_progress is not None:
                self.on_progress(len(self.found))
            self.check_cancel()

    def walk(self, top: str, rel_top: str) -> None:
        """Depth-first walk of the real folders under `top`; symlinked folders wait."""
        try:
            device: int | None = os.stat(top).st_dev
        except OSError:
            device = None  # reported by the walk itself
        self._drain([(top, rel_top)], via_symlink=False, device=device)

    def follow_links(self) -> None:
        """Walk the symlinked folders found, once every real folder of every root is done,
        so a symlink to a folder already walked is what gets skipped, never the real path."""
        while self.deferred:
            path, rel_path, device = self.deferred.pop()
            self._drain([(path, rel_path)], via_symlink=True, link=rel_path, device=device)

    def _drain(
        self,
        pending: list[tuple[str, str]],
        *,
        via_symlink: bool,
        device: int | None,
        link: str | None = None,
    ) -> None:
        """Walk `pending` folders; with `device`, only those on it (the root's)."""
        while pending:
            self.check_cancel()
            path, rel_dir = pending.pop()
            try:
                st = os.stat(path)
            except OSError as error:
                self.skipped.append(SkippedFile(rel_dir, _os_reason(error)))
                continue
            if not self.cross_devices and device is not None and st.st_dev != device:
                self.skipped.append(
                    SkippedFile(
                        rel_dir,
                        "another file system is mounted here: not walked "
                        "(memory.search.sync.crossDevices = true walks it)",
                    )
                )
                continue
            identity = (st.st_dev, st.st_ino)
            if identity in self.visited_dirs:
                if rel_dir == link:
                    self.skipped.append(SkippedFile(rel_dir, "symlink to a folder already scanned"))
                continue
            self.visited_dirs.add(identity)
            try:
                with os.scandir(path) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError as error:
                self.skipped.append(SkippedFile(rel_dir, _os_reason(error)))
                continue
            subdirs, links = self._visit_entries(entries, rel_dir, via_symlink=via_symlink)
            pending.extend(reversed(subdirs))
            self.deferred.extend((path, rel, device) for path, rel in reversed(links))

    def _visit_entries(
        self, entries: list[os.DirEntry[str]], rel_dir: str, *, via_symlink: bool
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        subdirs: list[tuple[str, str]] = []
        links: list[tuple[str, str]] = []
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in IGNORED_NAMES:
                continue
            rel_path = _join(rel_dir, name)
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir()  # follows symlinks
            except OSError as error:
                if is_note_name(name):
                    self.skipped.append(SkippedFile(rel_path, _os_reason(error)))
                continue
            if not is_dir and not is_note_name(name) and not self.is_media(entry.path):
                continue
            if self.rules.ignores(rel_path, name, is_dir=is_dir):
                continue
            if not _is_utf8(name):
                # The store keeps paths as UTF-8 text: such a name cannot be one of its keys.
                kind = "folder" if is_dir else "file"
                self.skipped.append(
                    SkippedFile(
                        printable_name(rel_path),
                        f"{kind} name is not valid UTF-8 (rename it to index it)",
                    )
                )
                continue
            if is_link:
                target = os.path.realpath(entry.path)
                if not _within(target, self.roots):
                    self.skipped.append(
                        SkippedFile(rel_path, "symlink points outside the scanned folders")
                    )
                    continue
                if is_dir:
                    links.append((entry.path, rel_path))
                    continue
            elif is_dir:
                subdirs.append((entry.path, rel_path))
                continue
            self._visit_file(entry, rel_path, via_symlink=via_symlink or is_link)
        return subdirs, links

    def _visit_file(self, entry: os.DirEntry[str], rel_path: str, *, via_symlink: bool) -> None:
        try:
            st = entry.stat()
        except OSError as error:
            reason = "broken symlink" if entry.is_symlink() else _os_reason(error)
            self.skipped.append(SkippedFile(rel_path, reason))
            return
        if not stat.S_ISREG(st.st_mode):
            self.skipped.append(SkippedFile(rel_path, "not a regular file"))
            return
        self.add_file(rel_path, entry.path, st, via_symlink=via_symlink)

    def is_media(self, path: str) -> bool:
        """An image or audio file under an extra root (never a note, never in the vault)."""
        media = self.media
        return (
            media is not None
            and Path(path).suffix.lower() in media.suffixes
            and _within(path, media.roots)
        )

    def add_extra(self, path: str) -> None:
        rel_path = _relative(path, self.vault)
        try:
            st = os.stat(path)
        except OSError as error:
            self.skipped.append(SkippedFile(rel_path, _os_reason(error)))
            return
        if stat.S_ISDIR(st.st_mode):
            self.walk(path, rel_path)
        elif not is_note_name(path) and not self.is_media(path):
            self.skipped.append(SkippedFile(rel_path, "not a Markdown file"))
        elif not stat.S_ISREG(st.st_mode):
            self.skipped.append(SkippedFile(rel_path, "not a regular file"))
        else:
            self.add_file(rel_path, path, st, via_symlink=False)

    def result(self) -> ScanResult:
        # A file reached twice (a symlink, an extra path inside the vault) is kept once:
        # under its real path when it has one, then inside the vault, then first by name.
        best: dict[tuple[int, int] | None, _Found] = {}
        for found in self.found:
            kept = best.get(found.file.identity)
            if kept is None or _preference(found) < _preference(kept):
                best[found.file.identity] = found
        files = sorted((found.file for found in best.values()), key=lambda f: f.rel_path)
        skipped = sorted(set(self.skipped), key=lambda s: (s.rel_path, s.reason))
        return ScanResult(files=files, skipped=skipped)


def _preference(found: _Found) -> tuple[bool, bool, str]:
    rel_path = found.file.rel_path
    return found.via_symlink, rel_path.startswith("../"), rel_path


def _relative(path: str, vault: str) -> str:
    try:
        rel_path = os.path.relpath(path, vault)
    except ValueError:  # another drive on Windows
        return Path(path).as_posix()
    return "" if rel_path == "." else rel_path.replace(os.sep, "/")


def scan_notes(
    vault: Path,
    rel_paths: Sequence[str],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    cross_devices: bool = False,
) -> ScanResult:
    """The notes at `rel_paths` of `vault` alone, listed as the walk would list them (what
    it would not list, or not find, is left out: hidden, ignored, reached through a link,
    on another device, gone): what a sync of a few known notes reads."""
    real_vault = os.path.realpath(vault)
    rules = IgnoreRules.load(Path(real_vault))
    device = os.stat(real_vault).st_dev
    files: list[ScannedFile] = []
    skipped: list[SkippedFile] = []
    for rel_path in rel_paths:
        path = os.path.join(real_vault, *rel_path.split("/"))
        if not _walk_lists(rel_path, rules) or os.path.realpath(path) != path:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or (st.st_dev != device and not cross_devices):
            continue
        if st.st_size > max_file_bytes:
            skipped.append(SkippedFile(rel_path, _too_large(st.st_size, max_file_bytes)))
            continue
        identity = (st.st_dev, st.st_ino)
        files.append(ScannedFile(rel_path, Path(path), st.st_size, st.st_mtime_ns, identity))
    return ScanResult(files, skipped)


def _walk_lists(rel_path: str, rules: IgnoreRules) -> bool:
    """Whether the walk lists the note at `rel_path` (its name and every folder on the way
    visible, not ignored)."""
    parts = rel_path.split("/")
    if not is_note_name(parts[-1]) or not _is_utf8(rel_path):
        return False
    for depth, name in enumerate(parts, start=1):
        if name.startswith(".") or name in IGNORED_NAMES or name in ("", ".."):
            return False
        is_dir = depth < len(parts)
        if rules.ignores("/".join(parts[:depth]), name, is_dir=is_dir):
            return False
    return True


def scan_roots(
    vault: Path,
    extra_paths: Sequence[Path] = (),
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    cancel: threading.Event | None = None,
    on_progress: Callable[[int], None] | None = None,
    media: MediaRule | None = None,
    cross_devices: bool = False,
) -> ScanResult:
    """List the notes under `vault` and `extra_paths` with their size and mtime (and, with
    `media`, the files of its suffixes under `extra_paths`).

    Each root's walk stays on the device the root is on (a folder mounted from another one
    is listed in `skipped` once) unless `cross_devices`.

    Problems with single files or folders are reported in `skipped`, never raised; only a
    missing or unreadable vault raises (FileNotFoundError, NotADirectoryError,
    PermissionError), and a set `cancel` event raises ScanCancelled.
    """
    vault_path = Path(vault).expanduser()
    if not vault_path.exists():
        raise FileNotFoundError(f"vault folder not found: {vault_path}")
    if not vault_path.is_dir():
        raise NotADirectoryError(f"vault is not a folder: {vault_path}")
    real_vault = os.path.realpath(vault_path)
    if not os.access(real_vault, os.R_OK | os.X_OK):
        raise PermissionError(f"vault folder is not readable: {vault_path}")
    extras = [
        os.path.abspath(os.path.join(real_vault, os.path.expanduser(extra)))
        for extra in extra_paths
    ]
    roots = [real_vault, *(os.path.realpath(extra) for extra in extras)]
    if media is not None:
        media_roots = {*extras, *(os.path.realpath(extra) for extra in extras)}
        media = dataclasses.replace(media, roots=tuple(sorted(media_roots)))
    walk = _Walk(
        vault=real_vault,
        roots=roots,
        rules=IgnoreRules.load(Path(real_vault)),
        max_file_bytes=max_file_bytes,
        cancel=cancel,
        on_progress=on_progress,
        media=media,
        cross_devices=cross_devices,
    )
    walk.walk(real_vault, "")
    for extra in extras:
        walk.add_extra(extra)
    walk.follow_links()
    result = walk.result()
    if on_progress is not None:
        on_progress(len(result.files))
    return result


def read_note_text(
    path: Path,
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    expected_identity: tuple[int, int] | None = None,
) -> NoteText:
    """Read and decode one note; problems become a `skip_reason`, never an exception.

    Invalid UTF-8 is replaced (U+FFFD) rather than skipped, so the rest of the note stays
    searchable; `replaced_invalid_utf8` tells the caller to report it. `expected_identity`
    is the scan's `ScannedFile.identity`: the scan checked where that file lives, so a
    different file opened under the same path (a symlink re-pointed outside the vault, a
    folder swapped for a link) is skipped, not read.
    """
    try:
        # O_NONBLOCK: opening a FIFO named like a note must not hang the scan.
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_BINARY)
    except OSError as error:
        return NoteText(None, "", skip_reason=_os_reason(error))
    try:
        st = os.fstat(fd)
        if expected_identity is not None and (st.st_dev, st.st_ino) != expected_identity:
            return NoteText(None, "", skip_reason="replaced by another file while being indexed")
        if not stat.S_ISREG(st.st_mode):
            return NoteText(None, "", skip_reason="not a regular file")
        if st.st_size > max_file_bytes:
            return NoteText(None, "", skip_reason=_too_large(st.st_size, max_file_bytes))
        with open(fd, "rb", closefd=False) as handle:
            # One byte more than allowed tells a file that grew since stat() from one at the limit.
            data = handle.read(max_file_bytes + 1)
    except OSError as error:
        return NoteText(None, "", skip_reason=_os_reason(error))
    finally:
        os.close(fd)
    if len(data) > max_file_bytes:
        return NoteText(None, "", skip_reason=_too_large(len(data), max_file_bytes))
    digest = hashlib.sha256(data).hexdigest()
    if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        return NoteText(None, digest, skip_reason="binary file")
    body = data.removeprefix(_UTF8_BOM)
    try:
        return NoteText(body.decode("utf-8"), digest)
    except UnicodeDecodeError:
        return NoteText(body.decode("utf-8", errors="replace"), digest, replaced_invalid_utf8=True)
