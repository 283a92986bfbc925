"""A lock between processes (and threads) that serves them in the order they asked.

An flock, and `filelock` over it, hands a freed lock to whichever waiter tries first: a server
writing a burst releases and asks again at once and usually wins, so another server's single
write waited behind twenty of the first one's. Here each waiter takes a ticket: under a short
lock on the folder it makes an empty node file numbered after the last one and holds an flock
on it. The lock is its own once every node numbered below it is unlocked: their holders
released it (and removed their node), gave up waiting, or died, for the kernel drops an flock
when its process ends, so a holder or waiter killed with SIGKILL never blocks the queue. A
waiter watches the node just ahead of it and removes what it finds unlocked. The nodes hold
no bytes: the lock is taken on a disk too full to write a byte to a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

_FOLDER_LOCK = ".queue.lock"
_SUFFIX = ".node"
# How often a waiter looks at the node ahead of it: from 1 ms, doubling to 2 ms (a memory
# write holds the lock for a millisecond or two; a longer wait costs a few syscalls a poll).
_FIRST_POLL_S = 0.001
_LONGEST_POLL_S = 0.002


class LockTimeout(Exception):
    """The lock was not had within the time given."""


class FairLock:
    """First come, first served over a folder of node files. One acquisition at a time per
    object: make one for each `with`."""

    def __init__(self, folder: Path, timeout: float | None = None) -> None:
        """`timeout`: seconds to wait for the turn (None: as long as it takes; 0: only when
        nobody holds or waits for it)."""
        self.folder = folder
        self.timeout = timeout
        self._node: Path | None = None
        self._fd: int | None = None

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def acquire(self) -> None:
        """Take a ticket and wait for the turn; LockTimeout (having left the queue) when it
        does not come within `timeout`."""
        if self._fd is not None:
            raise RuntimeError("this FairLock is already held; make one per acquisition")
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._folder_locked():
            ahead = self._nodes()
            if self.timeout == 0 and any(_locked(node) for node in ahead):
                raise LockTimeout(str(self.folder))
            number = _number(ahead[-1]) + 1 if ahead else 1
            self._node = self.folder / f"{number:012d}-{os.getpid()}{_SUFFIX}"
            flags = os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            self._fd = os.open(self._node, flags, 0o600)
            fcntl.flock(self._fd, fcntl.LOCK_EX)  # nobody can see it before this: at once
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        try:
            self._wait_for_turn(deadline)
        except BaseException:
            self.release()  # those behind now wait for those ahead
            raise

    def release(self) -> None:
        """Leave the queue (holding the lock or still waiting): the next waiter goes on."""
        node, fd = self._node, self._fd
        if node is None or fd is None:
            return
        node.unlink(missing_ok=True)
        os.close(fd)  # drops the flock, for a waiter that opened the node already
        self._node = self._fd = None

    def _wait_for_turn(self, deadline: float | None) -> None:
        assert self._node is not None
        mine = _number(self._node)
        poll = _FIRST_POLL_S
        while ahead := [node for node in self._nodes() if _number(node) < mine]:
            nearest = ahead[-1]
            if _locked(nearest):
                if deadline is not None and time.monotonic() >= deadline:
                    raise LockTimeout(str(self.folder))
                time.sleep(poll)
                poll = min(poll * 2, _LONGEST_POLL_S)
                continue
            # Released, given up or dead: out of the queue; look at the one before it.
            nearest.unlink(missing_ok=True)

    def _nodes(self) -> list[Path]:
        """The queue, first come first."""
        names = sorted(name for name in os.listdir(self.folder) if name.endswith(_SUFFIX))
        return [self.folder / name for name in names]

    @contextlib.contextmanager
    def _folder_locked(self) -> Iterator[None]:
        fd = os.open(self.folder / _FOLDER_LOCK, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held for a directory listing and a new file
            yield
        finally:
            os.close(fd)


def _number(node: Path) -> int:
    return int(node.name.split("-", 1)[0])


def _locked(node: Path) -> bool:
    """Whether the node's waiter still holds or waits (False for a node already gone)."""
    try:
        fd = os.open(node, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
