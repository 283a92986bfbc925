"""Small measuring helpers shared by the benchmarks."""

from __future__ import annotations

import json
import resource
import subprocess
from collections.abc import Sequence
from typing import Any

from apus.relaunch import own_command


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]


def run_worker(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one measurement in a fresh process (so its peak RSS is its own); parse its JSON."""
    command = [*own_command("apus.benchmarks.worker", frozen_entry=("_bench-worker",)), *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark step failed: {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
