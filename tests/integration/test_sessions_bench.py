"""`apus bench sessions` on a handful of generated transcripts: every figure is printed, for
each source's layout and format."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.vaults import run_apus

# Where each layout keeps the generated files, under the scratch folder.
LAYOUTS = {
    "paths": "agents/*/sessions/*.jsonl",
    "claude-code": "claude/projects/*/*.jsonl",
    "codex": "codex/sessions/*/*/*/rollout-*.jsonl",
}


@pytest.mark.parametrize("client", sorted(LAYOUTS))
def test_the_sessions_benchmark_prints_its_figures(tmp_path: Path, client: str) -> None:
    out = run_apus(
        "bench", "sessions", "--sessions", "6", "--messages", "10", "--queries", "9",
        "--append-many", "3", "--client", client, "--scratch", tmp_path / "bench",
    ).stdout  # fmt: skip
    assert re.search(
        rf"^transcripts\s+6 \(60 messages, \d+ chunks; {client} format\)$", out, re.M
    ), out
    for label in ("transcript step", "cold index", "no-change re-sync", "append 2 messages"):
        assert re.search(rf"^{label}\s+\S", out, re.M), (label, out)
    assert re.search(r"^append to 3\s+[\d.]+ s", out, re.M), out
    assert re.search(
        r"^sessions search\s+p50 [\d.]+ ms\s+p95 [\d.]+ ms\s+\(9 queries\)$", out, re.M
    )
    assert len(list((tmp_path / "bench").glob(LAYOUTS[client]))) == 6
