"""A note far over the default size limit, with the limit raised: indexed in bounded memory
(its chunks are made while the store writes them) and with progress of its own."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from apus.indexing.progress import SyncProgress
from support.vaults import make_settings, search_paths, sync, write_note


def test_a_large_single_line_note_reports_progress_and_is_found(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    words = ["alder", "birch", "cedar", "delta", "ember", "fjord", "grove"]
    line = " ".join(words[i % len(words)] for i in range(1_500_000)) + " zeppelin"
    write_note(vault, "huge.md", line)  # ~9 MB, no line break
    write_note(vault, "small.md", "# Small\n\nThe small note.\n")
    settings = make_settings(vault, memory__search__sync__maxFileBytes=20_000_000)
    events: list[SyncProgress] = []
    report = sync(settings, progress=events.append)
    assert report.added == 2 and report.skipped == []
    large = [event for event in events if event.phase == "large"]
    assert len(large) >= 3 and large[0].done == 0
    assert all(a.done <= b.done for a, b in pairwise(large))
    assert large[-1].done == large[-1].total == (vault / "huge.md").stat().st_size
    assert search_paths(settings, "zeppelin") == ["huge.md"]
    assert search_paths(settings, "small") == ["small.md"]
