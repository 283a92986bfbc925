"""Putting a new folder in place of an old one without a moment where neither is there."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# The file system or kernel cannot exchange: the caller falls back to two renames.
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV}


def _renameat2() -> Callable[..., int] | None:
    """libc's renameat2 (Linux 3.15+, glibc 2.28+), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    function.argtypes += [ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


_RENAMEAT2 = _renameat2()


def exchange(first: Path, second: Path) -> bool:
    """Swap two existing paths in one atomic step (RENAME_EXCHANGE): a reader opening either
    name finds the old or the new one, never nothing. False where the system cannot (nothing
    has changed then); other failures raise OSError."""
    if _RENAMEAT2 is None:
        return False
    done = _RENAMEAT2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))
