"""`apus bench hook` on a small corpus: the hook and a one-shot search as processes, in turn,
and whether the hook added context to the prompts that name a trigger (and only to those)."""

from __future__ import annotations

import re
from pathlib import Path

from support.vaults import run_apus, write_note

ROW = (
    r"^{name}\s+(?P<runs>\d+) runs\s+wall p50 (?P<p50>\d+)\s+p95 (?P<p95>\d+)"
    r"\s+\| cpu p50 (?P<cpu50>\d+)\s+p95 (?P<cpu95>\d+)$"
)


def test_the_hook_benchmark_times_the_hook_beside_a_search(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for number in range(10):
        write_note(corpus, f"pages/tool{number}.md", f"# tool{number}\n\nRuns tool {number}.\n")
    out = run_apus(
        "bench",
        "hook",
        "--corpus",
        corpus,
        "--entries",
        "8",
        "--runs",
        "4",
        "--scratch",
        tmp_path / "scratch",
    ).stdout
    for name in ("hook claude-code", "memory search"):
        row = re.search(ROW.format(name=re.escape(name)), out, re.M)
        assert row, (name, out)
        assert int(row["runs"]) == 4
        assert 0 < int(row["p50"]) <= int(row["p95"])
        assert int(row["cpu50"]) <= int(row["cpu95"])
    assert "12 notes, MEMORY.md and USER.md with 8 trigger entries" in out
    assert "hook added context on 2 of 4 prompts (2 name a trigger)" in out
    assert (tmp_path / "corpus" / "pages").is_dir() and len(list(corpus.rglob("*"))) == 11
