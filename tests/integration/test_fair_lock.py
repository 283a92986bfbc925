"""The writers' lock serves them in the order they came, across threads and processes, and
nobody killed while holding or waiting for it blocks the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from apus.fair_lock import FairLock, LockTimeout
from support.full_disk import full

# A process that takes the lock, says so on stdout, then holds it until stdin closes.
_HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from apus.fair_lock import FairLock

    lock = FairLock(Path(sys.argv[1]))
    lock.acquire()
    print("held", flush=True)
    sys.stdin.read()
    """
)


def _nodes(folder: Path) -> int:
    return sum(1 for name in os.listdir(folder) if name.endswith(".node"))


def _wait_until(check: Callable[[], bool]) -> None:
    """Look until `check()` holds: the queue's own files are the signal, not a clock."""
    while not check():
        threading.Event().wait(0.001)


def _holder(folder: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    return process


def test_waiters_are_served_in_the_order_they_came(tmp_path: Path) -> None:
    folder = tmp_path / "queue"
    first = FairLock(folder)
    first.acquire()
    order: list[int] = []
    threads = []
    for number in range(6):
        thread = threading.Thread(target=lambda n=number: _take_and_note(folder, order, n))
        thread.start()
        threads.append(thread)
        # The next one starts only once this one stands in the queue (its node is there).
        _wait_until(lambda count=number + 2: _nodes(folder) == count)
    first.release()
    for thread in threads:
        thread.join()
    assert order == list(range(6))
    assert _nodes(folder) == 0  # the last one out removes its node


def _take_and_note(folder: Path, order: list[int], number: int) -> None:
    with FairLock(folder):
        order.append(number)


def test_one_holder_at_a_time_across_processes(tmp_path: Path) -> None:
    folder = tmp_path / "queue"
    counter = tmp_path / "counter"
    counter.write_text("0")
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from apus.fair_lock import FairLock

        folder, counter = Path(sys.argv[1]), Path(sys.argv[2])
        for _ in range(200):
            with FairLock(folder):
                value = int(counter.read_text())  # read, then write: lost without the lock
                counter.write_text(str(value + 1))
        """
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(folder), str(counter)])
        for _ in range(3)
    ]
    assert [worker.wait() for worker in workers] == [0, 0, 0]
    assert counter.read_text() == "600"


def test_a_holder_killed_with_sigkill_lets_the_next_one_in(tmp_path: Path) -> None:
    folder = tmp_path / "queue"
    holder = _holder(folder)
    got = threading.Event()
    waiter = threading.Thread(target=lambda: (_take_and_note(folder, [], 0), got.set()))
    waiter.start()
    _wait_until(lambda: _nodes(folder) == 2)
    assert not got.is_set()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    waiter.join()
    assert got.is_set()


def test_a_waiter_that_gives_up_or_dies_keeps_its_place_for_those_behind(tmp_path: Path) -> None:
    folder = tmp_path / "queue"
    first = FairLock(folder)
    first.acquire()
    # A process waits, then is killed; a thread waits and gives up at once: their successor
    # must still wait for the holder, then get the lock.
    dying = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(folder)], stdin=subprocess.PIPE, text=True
    )
    _wait_until(lambda: _nodes(folder) == 2)
    impatient = FairLock(folder, timeout=0.05)
    with pytest.raises(LockTimeout):
        impatient.acquire()
    after: list[int] = []
    last = threading.Thread(target=lambda: _take_and_note(folder, after, 1))
    last.start()
    _wait_until(lambda: _nodes(folder) >= 3)
    dying.send_signal(signal.SIGKILL)
    dying.wait()
    assert after == []  # the holder is still there
    busy = FairLock(folder, timeout=0)
    with pytest.raises(LockTimeout):
        busy.acquire()  # held, and waited for: one that does not wait gives way at once
    first.release()
    last.join()
    assert after == [1]
    with FairLock(folder, timeout=0):
        pass  # free again


def test_the_lock_is_taken_on_a_disk_too_full_for_one_byte(small_disk: Path) -> None:
    folder = small_disk / "queue"
    folder.mkdir()
    with full(small_disk):
        with pytest.raises(OSError):
            (small_disk / "one-byte").write_bytes(b"x")
        with FairLock(folder, timeout=0):
            busy = FairLock(folder, timeout=0)
            with pytest.raises(LockTimeout):
                busy.acquire()
