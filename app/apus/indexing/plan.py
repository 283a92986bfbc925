"""What one sync will change, decided from the scan and the store before anything is written.

The plan is a value: what happens while it is carried out (notes refused, renames found,
a keyword write that failed) is the run's (`apus.indexing.run.SyncRun`), never written back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from apus.config import Settings
from apus.index.keyword import KeywordIndex
from apus.index.keyword_freshness import keyword_freshness
from apus.index.note_problems import NoteProblem, load_problems
from apus.index.store import FileRecord, Store
from apus.vault.chunk import CHUNKING_VERSION
from apus.vault.memory_notes import is_entry_note
from apus.vault.scan import ScannedFile, ScanResult, SkippedFile

# Above this many changed files a fresh keyword build is cheaper than incremental updates.
_REBUILD_THRESHOLD = 2000

# How the keyword index follows the store: each committed batch applied to it ("update"); a
# first index, empty at the start and grown by stretches of batches ("grow"); or built from
# the store once every note is written ("rebuild").
KeywordWay = Literal["update", "grow", "rebuild"]


@dataclass(frozen=True)
class SyncPlan:
    """What one sync will change, decided from the scan and the store before writing."""

    signature: str
    known: Mapping[str, FileRecord]  # the store's files by path
    to_read: tuple[ScannedFile, ...]  # new, or changed size/mtime/chunking: read and compare
    gone: Mapping[str, FileRecord]  # in the store, not on disk (some may turn out renamed)
    gone_by_sha: Mapping[str, tuple[FileRecord, ...]]  # `gone` by content, to spot renames
    skipped: tuple[SkippedFile, ...]  # by the scan
    keyword: KeywordWay
    unchanged: int
    # Notes with a problem, by path, as the last sync left them (none for a forced rebuild,
    # which reads every note again and finds their problems anew).
    problems: Mapping[str, NoteProblem]
    entries: bool = False  # notes of entries are chunked one entry a passage

    def signature_of(self, rel_path: str) -> str:
        """How the note at `rel_path` is chunked: a note of entries (apus.vault.memory_notes)
        one entry a passage, when `memory.search.chunking.entries` is on."""
        return signature_of(self.signature, self.entries, rel_path)


def chunking_signature(settings: Settings) -> str:
    chunking = settings.search.chunking
    return f"v{CHUNKING_VERSION}:{chunking.tokens}:{chunking.overlap}"


def signature_of(signature: str, entries: bool, rel_path: str) -> str:
    """The chunking signature of one note: a note of entries chunked entry by entry carries
    its own, so turning it on or off re-chunks those notes alone."""
    return f"{signature}+entries" if entries and is_entry_note(rel_path) else signature


def plan_sync(
    scan: ScanResult,
    store: Store,
    keyword: KeywordIndex,
    signature: str,
    *,
    force: bool,
    entries: bool = False,
    partial: bool = False,
) -> SyncPlan:
    """What a sync reads, removes and rebuilds. `partial`: `scan` lists some notes only (the
    session's own writes), so a note it does not list is not gone, and the skip list keeps
    what it says of the others."""
    seen = {scanned.rel_path for scanned in scan.files}
    if partial:  # the records of the listed notes are all it looks at
        found = (store.file_by_path(path) for path in seen)
        known = {record.path: record for record in found if record is not None}
    else:
        known = store.files(source="memory")  # transcripts are the transcript step's
    to_read: list[ScannedFile] = []
    unchanged = 0
    for scanned in scan.files:
        record = known.get(scanned.rel_path)
        if (
            record is not None
            and not force
            and record.size == scanned.size
            and record.mtime_ns == scanned.mtime_ns
            and record.chunking == signature_of(signature, entries, scanned.rel_path)
        ):
            unchanged += 1
        else:
            to_read.append(scanned)
    gone = {} if partial else {path: record for path, record in known.items() if path not in seen}
    skipped = list(scan.skipped)
    if partial:
        listed = seen | {s.rel_path for s in scan.skipped}
        kept = (SkippedFile(path, why) for path, why in store.skipped() if path not in listed)
        skipped.extend(kept)
    gone_by_sha: dict[str, tuple[FileRecord, ...]] = {}
    for record in gone.values():
        gone_by_sha[record.sha256] = (*gone_by_sha.get(record.sha256, ()), record)
    rebuild_keyword = (
        force
        or not keyword_freshness(keyword, store.generation()).current
        or len(to_read) > _REBUILD_THRESHOLD
    )
    way: KeywordWay = "rebuild" if rebuild_keyword else "update"
    if rebuild_keyword and not force and store.counts() == (0, 0):
        # Nothing stored yet (a first index, or an index set aside as damaged): there is no
        # old keyword index worth serving meanwhile, so it grows from the first batch.
        way = "grow"
    return SyncPlan(
        signature,
        known,
        tuple(to_read),
        gone,
        gone_by_sha,
        tuple(skipped),
        way,
        unchanged,
        problems={} if force else load_problems(store),
        entries=entries,
    )
