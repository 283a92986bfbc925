"""`apus bench embed` with the tiny real GGUF: every raw configuration and the pipeline get a row
of figures on the same texts, and the pipeline's ratio to the fastest raw row is printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.vaults import run_apus, write_note

ROW = r"\s+(?P<seconds>[\d.]+)\s+(?P<rate>\d+)\s+(?P<share>[\d.]+)\s"


@pytest.mark.slow
def test_the_embed_benchmark_prints_a_row_per_configuration(
    tmp_path: Path, tiny_model: Path
) -> None:
    corpus = tmp_path / "corpus"
    for number in range(6):
        body = " ".join(f"word{number}x{i}" for i in range(40 * (number + 1)))
        write_note(corpus, f"notes/n{number}.md", f"# Note {number}\n\n{body}\n")
    out = run_apus(
        "bench", "embed", "--model", tiny_model, "--corpus", corpus, "--rounds", "2", timeout=300
    ).stdout
    header = re.search(r"^6 files, (\d+) chunks, (\d+) tokens \(longest (\d+)\)", out, re.M)
    assert header, out
    labels = [
        "raw: one sequence per call",
        "raw: packed to 256 tokens per call",
        "raw: packed to 512 tokens per call",  # the tiny model's whole context
        "raw: packed to 512, 1 thread(s)",
        "raw: packed to 512, flash attention",
        "pipeline (embed stage)",
    ]
    shares = []
    for label in labels:
        row = re.search(rf"^{re.escape(label)}{ROW}", out, re.M)
        assert row, (label, out)
        assert float(row["seconds"]) > 0 and int(row["rate"]) > 0
        shares.append(float(row["share"]))
    assert max(shares[:-1]) == 1.0  # the fastest raw row is the reference
    fastest = re.search(r"^fastest raw: (.+)$", out, re.M)
    assert fastest and f"raw: {fastest[1]}" in labels, out
    ratio = re.search(r"^pipeline / fastest raw: ([\d.]+)$", out, re.M)
    assert ratio and float(ratio[1]) == shares[-1], out
