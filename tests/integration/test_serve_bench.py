"""`apus bench serve`: clients at once against one `apus mcp --http` on a scratch copy of a
corpus, beside one client making the same calls, keyword-only and hybrid on the tiny real
GGUF; every entry written is checked to be in its note once and found by search."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.vaults import run_apus, vault_digest, write_note

ROW = r"^    {tool}\s+(?P<calls>\d+)\s+p50\s+(?P<p50>[\d.]+) ms\s+p95\s+(?P<p95>[\d.]+) ms\s+p99"


def _corpus(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    for number in range(12):
        write_note(
            corpus,
            f"notes/n{number}.md",
            f"# Note {number}\n\nThe router closet holds box {number} and its cables.\n",
        )
    return corpus


@pytest.mark.slow
def test_the_serve_benchmark_checks_every_write(tmp_path: Path, tiny_model: Path) -> None:
    corpus = _corpus(tmp_path)
    before = vault_digest(corpus)
    out = run_apus(
        "bench",
        "serve",
        "--corpus",
        corpus,
        "--model",
        tiny_model,
        "--clients",
        "3",
        "--writers",
        "1",
        "--searches",
        "6",
        "--writes",
        "2",
        "--rounds",
        "1",
        "--scratch",
        tmp_path / "scratch",
        timeout=600,
    ).stdout
    assert vault_digest(corpus) == before  # the corpus is copied, never written
    for mode in ("keyword", "hybrid"):
        section = out.split(f"{mode}: ", 1)[1]
        assert section.startswith("12 notes"), out
        for clients in (1, 3):
            row = re.search(
                rf"^  {clients} client\(s\): [\d.]+ calls/s .*, (\d+) errors", section, re.M
            )
            assert row and row[1] == "0", out
        for tool in ("memory_search", "memory_write"):
            assert re.search(ROW.format(tool=tool), section, re.M), (tool, out)
        assert "written 4: missing 0, doubled 0, not found by search 0" in section, out
    assert re.search(r"3 clients / 1: throughput [\d.]+x", out)
