"""A disk filled to its last byte, for the tests that mount a small tmpfs (as root)."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def full(disk: Path) -> Iterator[None]:
    """Fill `disk` until it takes no more bytes; free it again afterwards."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        block = b"\0" * 65536
        while block:
            try:
                os.write(fd, block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                block = block[: len(block) // 2]
    finally:
        os.close(fd)
    try:
        yield
    finally:
        filler.unlink()
