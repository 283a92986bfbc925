"""`e` on a search result hands the real terminal to $EDITOR at the passage's line, then the
app comes back: the app runs in a pseudo-terminal here, as in a user's shell (the headless
test driver cannot suspend, so Pilot cannot show this)."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

from support.vaults import cli_env

# Only a guard against a hang: each wait below is for something the app shows or does.
PATIENCE_S = 120.0
ALT_SCREEN = b"\x1b[?1049h"
_ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


class Terminal:
    """A pseudo-terminal of 120x40 running one command; what it printed, escapes removed."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)
        self._seen = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self._seen += data

    def raw(self) -> bytes:
        with self._lock:
            return bytes(self._seen)

    def text(self) -> str:
        return _ESCAPES.sub(b"", self.raw()).decode("utf-8", "replace")

    def wait_for_raw(self, what: bytes, count: int) -> int:
        """Wait until `what` has been printed `count` times; where its last one ends."""
        deadline = time.monotonic() + PATIENCE_S
        while self.raw().count(what) < count:
            assert self.proc.poll() is None, f"the app ended before printing {what!r}"
            assert time.monotonic() < deadline, f"{what!r} not printed {count} times"
            time.sleep(0.05)
        raw = self.raw()
        return raw.rfind(what) + len(what)

    def wait_for(self, what: str, after: int = 0) -> None:
        """Wait until `what` is printed (past the first `after` characters of text)."""
        deadline = time.monotonic() + PATIENCE_S
        while what not in self.text()[after:]:
            assert self.proc.poll() is None, f"the app ended before showing {what!r}"
            assert time.monotonic() < deadline, f"never showed {what!r}: {self.text()[-800:]}"
            time.sleep(0.05)

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode("utf-8"))

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=PATIENCE_S)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.master)


def test_e_opens_the_passage_in_the_editor_and_the_app_comes_back(
    indexed_vault: Path, config_file: Path, tmp_path: Path
) -> None:
    called = tmp_path / "editor-args"
    editor = tmp_path / "editor.sh"
    editor.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {called}\n', encoding="utf-8")
    editor.chmod(0o755)
    env = {**cli_env(), "EDITOR": str(editor), "TERM": "xterm-256color"}
    env.pop("VISUAL", None)
    argv = [sys.executable, "-m", "apus", "--config", str(config_file)]
    terminal = Terminal([*argv, "--vault", str(indexed_vault)], env)
    try:
        terminal.wait_for("5 notes")  # the app is up, its index read
        terminal.type("18 g coffee")
        terminal.wait_for("coffee-brewing.md")  # the result is listed
        shown = len(terminal.text())
        terminal.type("\x1b[B")  # down: into the results
        terminal.wait_for("e Edit", after=shown)  # the footer offers Edit for the result
        terminal.type("e")
        deadline = time.monotonic() + PATIENCE_S
        while not called.exists():
            assert terminal.proc.poll() is None, terminal.text()[-800:]
            assert time.monotonic() < deadline, "the editor was never started"
            time.sleep(0.05)
        # The editor got the passage's first line and the note's full path, in that form.
        lines = called.read_text(encoding="utf-8").splitlines()
        assert lines[1:] == [str(indexed_vault / "notes" / "coffee-brewing.md")]
        assert re.fullmatch(r"\+\d+", lines[0]) and int(lines[0][1:]) >= 1, lines
        # The app is back in the terminal once the editor is done, and quits cleanly.
        # The app takes the terminal back (it enters the alternate screen a second time) and
        # draws itself again; only then does it read keys once more.
        back = terminal.wait_for_raw(ALT_SCREEN, 2)
        deadline = time.monotonic() + PATIENCE_S
        while b"5 notes" not in terminal.raw()[back:]:
            assert terminal.proc.poll() is None, "the app did not come back from the editor"
            assert time.monotonic() < deadline, terminal.text()[-800:]
            time.sleep(0.05)
        terminal.type("\x11")  # ctrl+q
    finally:
        code = terminal.close()
    assert code == 0, terminal.text()[-800:]
