"""The test side of `apus.indexing.holds`: stop a sync at a point of its work, act, let it go.

A kill, a search or a look at the status bar made while the sync is held there happens at
that point on any machine, however loaded or fast it is.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from apus.indexing.holds import AT_ENV, FOLDER_ENV
from support.vaults import APUS, cli_env

# Only a guard against a hang (the sync waits for the test, not for a clock): generous.
PATIENCE_S = 300.0
RELEASE_ALL = 10**9


class Hold:
    """One sync's points, recorded in `folder` (created)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def env(self, at: str | int | None = None) -> dict[str, str]:
        """The variables that make a sync record its points and, with `at`, stop there."""
        variables = {FOLDER_ENV: str(self.folder)}
        if at is not None:
            variables[AT_ENV] = str(at)
        return variables

    def events(self) -> list[dict[str, Any]]:
        """The points passed so far, in order."""
        try:
            text = (self.folder / "events").read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def held(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.folder / "held").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def wait_held(
        self,
        after: int = 0,
        proc: subprocess.Popen[Any] | None = None,
        ended: Callable[[], bool] | None = None,
    ) -> dict[str, Any]:
        """Wait until the sync stands at a point numbered above `after`; return that point.
        Fails if `proc` (or the sync `ended` tells of) ends first: it never got there."""
        deadline = time.monotonic() + PATIENCE_S
        while True:
            point = self.held()
            if point is not None and point["n"] > after:
                return point
            if (proc is not None and proc.poll() is not None) or (ended and ended()):
                raise AssertionError(
                    f"the sync ended before it was held after point {after}; "
                    f"points passed: {self.events()[-3:]}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"no sync was held after point {after} in {PATIENCE_S}s")
            time.sleep(0.005)

    def kill_held(self, proc: subprocess.Popen[Any]) -> None:
        """SIGKILL `proc` where its sync is held; fail if it ended before it got there."""
        try:
            self.wait_held(proc=proc)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL, "the sync ended before it could be killed"

    def release(self, through: int = RELEASE_ALL) -> None:
        """Let the sync go on past every point up to `through` (default: all of them)."""
        staged = self.folder / "go.new"
        staged.write_text(str(through), encoding="utf-8")
        staged.replace(self.folder / "go")


def start_held_index(vault: Path, hold: Hold, at: str) -> subprocess.Popen[str]:
    """`apus --vault VAULT memory index` in its own process, to stop at point `at`."""
    return subprocess.Popen(
        [*APUS, "--vault", str(vault), "memory", "index"],
        env=cli_env(**hold.env(at)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextmanager
def held_index(vault: Path, hold: Hold, at: str) -> Iterator[subprocess.Popen[str]]:
    """`apus memory index` of `vault` standing at point `at` while the body acts; then let
    go, and held to a clean end (killed instead when the body failed)."""
    proc = start_held_index(vault, hold, at)
    try:
        hold.wait_held(proc=proc)
        yield proc
        hold.release()
        _, stderr = proc.communicate(timeout=PATIENCE_S)
        assert proc.returncode == 0, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
