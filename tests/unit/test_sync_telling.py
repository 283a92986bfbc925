"""What other processes are told of a sync reading notes: the start of reading, each batch
of notes and the last note, every event of other phases."""

from __future__ import annotations

from pathlib import Path

from apus.indexing.progress import SyncProgress
from apus.indexing.reading_progress import ReadingProgressFile, reading_progress
from apus.indexing.sync import _Telling
from apus.indexing.writers import BATCH_FILES


def test_notes_read_are_told_as_reading_starts_then_at_each_batch(tmp_path: Path) -> None:
    telling = _Telling(ReadingProgressFile(tmp_path))
    total = 3 * BATCH_FILES + 120
    told: list[tuple[str, int]] = []
    events = [SyncProgress("scan", 10, 0)]
    events += [SyncProgress("index", done, total) for done in range(50, total, 50)]
    events += [SyncProgress("index", total, total), SyncProgress("keyword", 0, 9)]
    for event in events:
        telling.tell(event)
        seen = reading_progress(tmp_path)
        assert seen is not None
        told.append((seen.phase, seen.done))
    assert told[0] == ("scan", 10)
    assert told[1:5] == [("index", 50)] * 4  # reading has started; no batch yet
    assert told[10] == ("index", BATCH_FILES)
    assert {done for phase, done in told if phase == "index"} == {
        50,
        BATCH_FILES,
        2 * BATCH_FILES,
        3 * BATCH_FILES,
        total,
    }
    assert told[-1] == ("keyword", 0)
