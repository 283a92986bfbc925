"""The notes folder a setting names: checked before anything reads it or writes an index."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from apus.errors import VaultError

_FIX = "point --vault (or `vault` in config.toml) at your notes folder, or run `apus setup`"
_KINDS = {
    stat.S_IFREG: "a file",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFIFO: "a pipe",
    stat.S_IFSOCK: "a socket",
}


class VaultMissingError(VaultError):
    """The notes folder does not exist (it may have existed: an unplugged drive)."""


def check_vault(raw: str) -> Path:
    """The folder `raw` names (`~` expanded, symlinks resolved), or a VaultError that says
    in one line what is wrong with it and what to do."""
    if not raw.strip():
        raise VaultError("The notes folder is an empty path.", fix=_FIX)
    shown = raw.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if shown != raw:
        raise VaultError(
            f"The notes folder {shown} has a name that is not valid UTF-8.",
            fix="rename the folder (or a folder above it) to a UTF-8 name",
        )
    path = Path(raw).expanduser()
    try:
        info = os.stat(path)
    except OSError as exc:
        missing = exc.errno in (errno.ENOENT, errno.ENOTDIR)
        error = VaultMissingError if missing else VaultError
        raise error(f"The notes folder {path} {_stat_problem(exc)}.", fix=_FIX) from exc
    if not stat.S_ISDIR(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a folder")
        raise VaultError(f"The notes folder {path} is {kind}, not a folder.", fix=_FIX)
    if not os.access(path, os.R_OK | os.X_OK):
        raise VaultError(
            f"The notes folder {path} cannot be opened (permission denied).",
            fix=f"give yourself read and search permission on it (chmod u+rx {path}), "
            "or choose another folder",
        )
    return Path(os.path.realpath(path))


def _stat_problem(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink loop"
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return "does not exist"
    if exc.errno == errno.EACCES:
        return "cannot be reached (permission denied on a folder above it)"
    return f"cannot be used ({exc.strerror or exc})"
