"""Peak memory and time of `apus memory index` on one huge single-line note.

    .venv/bin/python tests/support/huge_note.py 100 300

For each size (MB) it writes a vault holding one note of that many bytes on a single line
(words and spaces, no line break), raises memory.search.sync.maxFileBytes above it, runs
`apus memory index` in a fresh process with embeddings off, and prints that process's peak
resident memory (wait4's ru_maxrss) and wall time. Not a test: it takes minutes.

Measured on a 2-core machine shared with other work (load 3 to 6, so times are rough):

    note     before (whole-note chunking)   after (chunks made as written)
    100 MB   451 MB, 177 s                  281 MB, 158 s
    300 MB   1147 MB, 1262 s                660 MB, 699 s

What is left of the peak is the read itself: the file's bytes and its decoded text side by
side for a moment (about twice the note), then the text once while it is chunked.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_WORDS = [
    "alder", "birch", "cedar", "delta", "ember", "fjord", "grove", "heron", "inlet", "juniper",
    "kestrel", "larch", "maple", "nettle", "osprey", "pine", "quartz", "rowan", "sorrel", "tern",
]  # fmt: skip


def write_single_line(path: Path, size: int) -> None:
    rng = random.Random(size)
    block = " ".join(rng.choice(_WORDS) for _ in range(200_000)) + " "
    data = block.encode()
    with path.open("wb") as handle:
        written = 0
        while written < size:
            part = data[: size - written]
            handle.write(part)
            written += len(part)


def measure(size_mb: int) -> tuple[float, float, int]:
    """(peak RSS in MB, seconds, exit status) of one `apus memory index` run."""
    with tempfile.TemporaryDirectory(prefix="apus-huge-") as folder:
        root = Path(folder)
        vault = root / "vault"
        vault.mkdir()
        write_single_line(vault / "huge.md", size_mb * 1_000_000)
        (vault / "small.md").write_text("# Small\n\nThe small note.\n", encoding="utf-8")
        env = dict(os.environ)
        for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
            env[name] = str(root / name.lower())
        env["APUS_MEMORY__SEARCH__PROVIDER"] = "none"
        env["APUS_MEMORY__SEARCH__SYNC__MAXFILEBYTES"] = str(size_mb * 1_000_000 + 1_000_000)
        command = [sys.executable, "-m", "apus", "--vault", str(vault), "memory", "index"]
        started = time.monotonic()
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        return usage.ru_maxrss / 1024, seconds, process.returncode


def main(sizes: list[str]) -> None:
    for size in sizes or ["100", "300"]:
        peak, seconds, code = measure(int(size))
        print(f"{size} MB single-line note: peak RSS {peak:.0f} MB, {seconds:.1f} s, exit {code}")


if __name__ == "__main__":
    main(sys.argv[1:])
