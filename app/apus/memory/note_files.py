"""Memory notes opened for writing through folder descriptors, from the vault root down.

A path checked and then opened by name can be changed in between: a folder swapped for a link
to somewhere else is followed by the open (`O_NOFOLLOW` guards only the last name). Here each
step opens one name relative to the folder above it (`openat`) without following a link, so
what is written to is what was checked: a folder or note that is a link, or not a folder or a
regular file, is refused at the step that meets it. A note with more than one hard link is
refused too (its other name may be anywhere, outside the vault included). A note that does not
exist is made whole: written beside it under a hidden name, then linked into place only if
nothing took its name meanwhile, so it appears with all its text or not at all.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from types import TracebackType

from apus.errors import ApusError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO put where a note was must not block the open (it is refused after).
_NOTE_FLAGS = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# What link(2) answers on a file system without hard links (FAT, exFAT, some network ones).
_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV}


class WriteRefusedError(ApusError):
    """An entry that is not written (writing is off, bad target, too long, unsafe file)."""


class NoteFolder:
    """An open folder of the vault (`parts` below its root), every step opened without
    following a link; `make` creates a missing last folder."""

    def __init__(self, vault: Path, parts: tuple[str, ...], *, make: bool = False) -> None:
        self.shown = "/".join(parts) + "/" if parts else ""
        self._made: tuple[int, str] | None = None  # (parent fd, name) of a folder made here
        fds = [os.open(vault, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)]
        try:
            for part in parts:
                fds.append(self._open_step(fds[-1], part, make=make))
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        self.fd = fds[-1]
        self._parents = fds[:-1]

    def __enter__(self) -> NoteFolder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        for fd in (self.fd, *reversed(self._parents)):
            os.close(fd)

    def forget_made_folder(self) -> None:
        """Remove the folder this opened by making it, if nothing was put in it."""
        if self._made is not None:
            parent, name = self._made
            with contextlib.suppress(OSError):  # something is in it now: it stays
                os.rmdir(name, dir_fd=parent)

    def open_note(self, name: str) -> int | None:
        """The note, open for appending (the caller closes it), or None when it does not
        exist; WriteRefusedError when it is a link, not a regular file, or hard-linked."""
        try:
            fd = os.open(name, _NOTE_FLAGS, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._refused(name, exc) from exc
        try:
            self.check_note(name, os.fstat(fd))
        except BaseException:
            os.close(fd)
            raise
        os.set_blocking(fd, True)
        return fd

    def check_note(self, name: str, info: os.stat_result) -> None:
        """Refuse what `info` (the open file's own) shows is no note to append to."""
        shown = self.shown + name
        if not stat.S_ISREG(info.st_mode):
            raise WriteRefusedError(
                f"{shown} is not a regular file; entries are written only to notes.",
                fix=f"move it away, or write to another target than {shown}",
            )
        if info.st_nlink > 1:
            raise WriteRefusedError(
                f"{shown} has {info.st_nlink} hard links: another name of the same file may "
                "be outside the vault, so it is not written to.",
                fix=f"give it a file of its own: cp {shown} {shown}.tmp && mv {shown}.tmp {shown}",
            )

    def identity(self, name: str) -> tuple[int, int] | None:
        """(device, inode) of what `name` is now, without following a link; None if gone."""
        try:
            info = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return info.st_dev, info.st_ino

    def read(self, name: str) -> bytes | None:
        """The bytes of the regular file `name` now (None when gone or not such a file)."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self.fd)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            with os.fdopen(os.dup(fd), "rb") as handle:
                return handle.read()
        finally:
            os.close(fd)

    def create_note(self, name: str, data: bytes) -> bool:
        """Make `name` holding `data`, whole or not at all; False when a note of that name
        appeared meanwhile (nothing is made: append to it instead)."""
        hidden = f".{name}.{secrets.token_hex(4)}.tmp"  # not a note name: never indexed
        fd = os.open(
            hidden,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o644,
            dir_fd=self.fd,
        )
        try:
            try:
                write_whole(fd, data, self.shown + name)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(hidden, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
            except FileExistsError:
                return False
            except OSError as exc:
                if exc.errno not in _NO_HARD_LINKS:
                    raise
                return self._create_in_place(name, data)
        finally:
            os.unlink(hidden, dir_fd=self.fd)
        os.fsync(self.fd)  # the new name, on disk with the text
        return True

    def _create_in_place(self, name: str, data: bytes) -> bool:
        """`create_note` where hard links are not supported: made and written in one step,
        and removed again when the text does not all reach it."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(name, flags, 0o644, dir_fd=self.fd)
        except FileExistsError:
            return False
        try:
            write_whole(fd, data, self.shown + name)
            os.fsync(fd)
        except BaseException:
            os.unlink(name, dir_fd=self.fd)
            raise
        finally:
            os.close(fd)
        return True

    def _open_step(self, parent: int, name: str, *, make: bool) -> int:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not make:
                raise
        except OSError as exc:
            raise self._refused(name, exc, folder=True) from exc
        try:
            os.mkdir(name, 0o755, dir_fd=parent)
            self._made = (parent, name)
        except FileExistsError:
            pass  # made by someone else meanwhile: opened (and checked) below
        except OSError as exc:
            raise self._refused(name, exc, folder=True) from exc
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except OSError as exc:
            raise self._refused(name, exc, folder=True) from exc

    def _refused(self, name: str, exc: OSError, *, folder: bool = False) -> ApusError:
        if folder:
            shown = name + "/"
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                return WriteRefusedError(
                    f"{shown} is a link or not a folder; entries are written only to real "
                    "files inside the vault.",
                    fix=f"make {shown} a plain folder of the vault",
                )
            return write_error(shown, exc)
        shown = self.shown + name
        if exc.errno == errno.ELOOP:
            return WriteRefusedError(
                f"{shown} is a symlink; entries are written only to real files in the vault.",
                fix=f"replace the link with the note itself, or use a target other than {shown}",
            )
        if exc.errno in (errno.EISDIR, errno.ENXIO):  # a folder, or a socket, in its place
            return WriteRefusedError(
                f"{shown} is not a regular file; entries are written only to notes.",
                fix=f"move it away, or write to another target than {shown}",
            )
        return write_error(shown, exc)


def write_whole(fd: int, data: bytes, shown: str) -> None:
    """Write all of `data` in one call; a short write is an error (the disk is full)."""
    try:
        written = os.write(fd, data)
    except OSError as exc:
        raise write_error(shown, exc) from exc
    if written != len(data):
        raise WriteRefusedError(
            f"Only {written} of {len(data)} bytes reached {shown}: the disk is full.",
            fix="free some space on the disk holding the vault, then write the entry again",
        )


def write_error(shown: str, exc: OSError) -> WriteRefusedError:
    """An OSError met while writing `shown`, as the agent or person should read it."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return WriteRefusedError(
            f"{shown} cannot be written: the disk is full.",
            fix="free some space on the disk holding the vault, then write the entry again",
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return WriteRefusedError(
            f"{shown} cannot be written ({exc.strerror}).",
            fix="give yourself write permission on it and its folder, or write elsewhere",
        )
    return WriteRefusedError(
        f"{shown} cannot be written ({exc.strerror or exc}).",
        fix="check the disk holding the vault, then write the entry again",
    )
