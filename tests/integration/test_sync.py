"""Incremental sync on real SQLite and Whoosh: changes, renames, cancel, kill, locks, repair."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from whoosh.filedb.compound import CompoundStorage
from whoosh.filedb.structfile import StructFile

from apus.config import Settings
from apus.errors import IndexBusyError
from apus.index.keyword import STAMP_FILE, KeywordIndex
from apus.index.status import IndexStatus, collect_status
from apus.indexing.lock import WriterLock
from apus.indexing.progress import SyncProgress
from apus.indexing.request import SyncRequest
from apus.search.engine import Searcher
from support.holds import Hold
from support.vaults import (
    APUS,
    chunk_ids_of,
    cli_env,
    generation,
    index_vault,
    make_settings,
    run_apus,
    run_json,
    search,
    search_paths,
    stored_paths,
    sync,
    write_note,
)

# The Indexer commits every 500 files; vaults bigger than that show resumable progress.
BATCH = 500


def _small_vault(root: Path) -> Path:
    write_note(root, "alpha.md", "# Alpha\n\nThe albatross flies over the harbour.\n")
    write_note(root, "beta.md", "# Beta\n\nA note about the bittern and its booming call.\n")
    write_note(root, "sub/gamma.md", "# Gamma\n\nThe cormorant dries its wings on a post.\n")
    return root


def _numbered_vault(root: Path, count: int) -> Path:
    """`count` small notes, each with the shared word `kestrel` and its own `markerNNNN`."""
    filler = "Field notes on raptors, weather, wind and the hedgerows by the canal. " * 3
    for i in range(count):
        write_note(
            root,
            f"n{i // 100:02d}/note-{i:04d}.md",
            f"# Note {i}\n\nSeen today: a kestrel hovering, marker{i:04d}.\n\n{filler}\n",
        )
    return root


def _keyword_files(index_dir: Path) -> dict[str, tuple[int, int]]:
    folder = index_dir / KeywordIndex.DIRNAME
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()}


def _keyword_current(settings: Settings) -> bool:
    state = KeywordIndex(settings.index_dir()).state()
    return state.usable and state.generation == generation(settings)


def test_new_changed_and_deleted_files(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    settings = make_settings(vault)
    first = sync(settings)
    assert (first.files, first.added, first.changed, first.removed) == (3, 3, 0, 0)
    assert search_paths(settings, "bittern") == ["beta.md"]
    assert search_paths(settings, "cormorant") == ["sub/gamma.md"]
    beta_ids = chunk_ids_of(settings, "beta.md")
    alpha_ids = chunk_ids_of(settings, "alpha.md")

    # A different size guarantees the change is seen whatever the clock's resolution.
    write_note(vault, "beta.md", "# Beta\n\nNow about the bluethroat singing at dawn, no herons.\n")
    (vault / "sub" / "gamma.md").unlink()
    write_note(vault, "sub/deeper/delta.md", "# Delta\n\nA dunlin flock on the mudflats.\n")
    second = sync(settings)
    assert (second.added, second.changed, second.removed, second.renamed) == (1, 1, 1, 0)
    assert second.unchanged == 1
    assert second.keyword_rebuilt is False  # small changes update Whoosh in place

    assert search_paths(settings, "bittern") == []
    assert search_paths(settings, "bluethroat") == ["beta.md"]
    assert search_paths(settings, "cormorant") == []
    assert search_paths(settings, "dunlin") == ["sub/deeper/delta.md"]
    assert stored_paths(settings) == {"alpha.md", "beta.md", "sub/deeper/delta.md"}
    assert chunk_ids_of(settings, "alpha.md") == alpha_ids  # untouched file, same chunks
    assert set(chunk_ids_of(settings, "beta.md")).isdisjoint(beta_ids)  # re-chunked
    assert _keyword_current(settings)


def test_rename_keeps_chunks_and_follows_the_new_path(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    write_note(vault, "daily/2026-01-05.md", "Planted flamingo flowers along the fence.\n\n" * 3)
    settings = make_settings(vault)
    sync(settings)
    alpha_ids = chunk_ids_of(settings, "alpha.md")
    daily_ids = chunk_ids_of(settings, "daily/2026-01-05.md")
    [before] = search(settings, "flamingo")
    assert before.note_date == "2026-01-05"
    generation_before = generation(settings)

    (vault / "archive").mkdir()
    os.rename(vault / "alpha.md", vault / "archive" / "alpha-renamed.md")
    os.rename(vault / "daily" / "2026-01-05.md", vault / "archive" / "garden.md")
    report = sync(settings)

    assert (report.renamed, report.added, report.removed, report.changed) == (2, 0, 0, 0)
    assert chunk_ids_of(settings, "archive/alpha-renamed.md") == alpha_ids
    assert chunk_ids_of(settings, "archive/garden.md") == daily_ids
    assert stored_paths(settings) == {
        "archive/alpha-renamed.md",
        "archive/garden.md",
        "beta.md",
        "sub/gamma.md",
    }
    assert search_paths(settings, "albatross") == ["archive/alpha-renamed.md"]
    assert search_paths(settings, "alpha-renamed")[0] == "archive/alpha-renamed.md"
    # What the old path said about the note (its date, its stem as title) goes with it.
    [after] = search(settings, "flamingo")
    assert after.path == "archive/garden.md"
    assert after.note_date is None
    assert after.title == "garden"
    assert generation(settings) > generation_before
    assert _keyword_current(settings)


def test_unchanged_sync_touches_nothing(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    settings = make_settings(vault)
    sync(settings)
    generation_before = generation(settings)
    keyword_before = _keyword_files(settings.index_dir())
    ids_before = chunk_ids_of(settings, "beta.md")

    again = sync(settings)
    assert (again.added, again.changed, again.removed, again.renamed) == (0, 0, 0, 0)
    assert again.unchanged == 3
    assert again.keyword_rebuilt is False
    assert generation(settings) == generation_before
    assert _keyword_files(settings.index_dir()) == keyword_before

    # Touched but not edited: the hash settles it, nothing is re-chunked.
    later = time.time_ns() + 5_000_000_000
    os.utime(vault / "beta.md", ns=(later, later))
    touched = sync(settings)
    assert (touched.added, touched.changed, touched.unchanged) == (0, 0, 3)
    assert generation(settings) == generation_before
    assert chunk_ids_of(settings, "beta.md") == ids_before
    assert _keyword_files(settings.index_dir()) == keyword_before


def test_force_rebuilds_everything(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    settings = make_settings(vault)
    sync(settings)
    generation_before = generation(settings)
    ids_before = chunk_ids_of(settings, "alpha.md")
    beta_before = chunk_ids_of(settings, "beta.md")
    write_note(vault, "beta.md", "# Beta\n\nA note about the bittern, now with a new line.\n")

    forced = sync(settings, SyncRequest(force=True))
    assert forced.changed == 3
    assert forced.keyword_rebuilt is True
    assert generation(settings) > generation_before
    # Unchanged text keeps its chunk id, so readers that pair the new store with the old
    # keyword index while it is swapped in still find it (test_force_rebuild.py); new
    # text gets an id never given before.
    assert chunk_ids_of(settings, "alpha.md") == ids_before
    assert min(chunk_ids_of(settings, "beta.md")) > max(ids_before + beta_before)
    assert search_paths(settings, "albatross") == ["alpha.md"]
    assert search_paths(settings, "bittern") == ["beta.md"]
    assert _keyword_current(settings)


def test_open_searcher_follows_later_syncs(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    settings = make_settings(vault)
    sync(settings)
    searcher = Searcher(settings)  # long-lived, as the app keeps it
    try:

        def paths(query: str) -> list[str]:
            return [hit.path for hit in searcher.search(query).hits]

        assert paths("albatross") == ["alpha.md"]
        write_note(vault, "alpha.md", "# Alpha\n\nNow the avocet wades, the big bird is gone.\n")
        sync(settings)
        assert paths("albatross") == []
        assert paths("avocet") == ["alpha.md"]
        sync(settings, SyncRequest(force=True))  # the whole keyword folder is swapped under it
        assert paths("avocet") == ["alpha.md"]
        assert paths("cormorant") == ["sub/gamma.md"]
    finally:
        searcher.close()


def test_extra_paths_are_indexed_relative_to_the_vault(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    write_note(tmp_path / "shared", "team.md", "# Team\n\nThe osprey project kicks off Monday.\n")
    settings = make_settings(vault, memory__search__extraPaths=["../shared"])
    sync(settings)
    assert search_paths(settings, "osprey") == ["../shared/team.md"]


def test_ignore_rules(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    hidden = {
        ".obsidian/workspace.md": "wigeon in a hidden folder",
        ".git/notes.md": "wigeon in git",
        "node_modules/pkg/README.md": "wigeon in node_modules",
        "drafts/secret.md": "wigeon in an ignored folder",
        "scratch.md": "wigeon in an ignored file",
        "todo.txt": "wigeon in a text file",
    }
    for rel, text in hidden.items():
        write_note(vault, rel, text + "\n")
    write_note(vault, ".apusignore", "drafts/\nscratch.md\n")
    write_note(vault, "long.markdown", "A wigeon on the lake.\n")
    settings = make_settings(vault)
    sync(settings)
    assert search_paths(settings, "wigeon") == ["long.markdown"]
    assert stored_paths(settings) == {"alpha.md", "beta.md", "sub/gamma.md", "long.markdown"}


def test_a_stopped_sync_counts_only_the_notes_it_committed(tmp_path: Path) -> None:
    vault = _numbered_vault(tmp_path / "vault", BATCH + 100)
    settings = make_settings(vault)
    cancel = threading.Event()

    def stop_within_the_second_batch(event: SyncProgress) -> None:
        if event.phase == "index" and event.done >= BATCH + 50:
            cancel.set()  # 50 notes of the second batch are read, none written

    stopped = sync(settings, cancel=cancel, progress=stop_within_the_second_batch)
    assert stopped.cancelled is True
    assert stopped.added == len(stored_paths(settings)) == BATCH


def test_cancel_mid_sync_then_resume(tmp_path: Path) -> None:
    count = BATCH + 100
    vault = _numbered_vault(tmp_path / "vault", count)
    settings = make_settings(vault)
    cancel = threading.Event()

    def stop_after_first_batch(event: SyncProgress) -> None:
        if event.phase == "index" and event.done >= BATCH:
            cancel.set()

    stopped = sync(settings, cancel=cancel, progress=stop_after_first_batch)
    assert stopped.cancelled is True
    committed = stored_paths(settings)
    assert len(committed) == BATCH  # the first batch survived the cancel
    hits = search(settings, "kestrel")
    assert hits and {hit.path for hit in hits} <= committed

    resumed = sync(settings)
    assert resumed.cancelled is False
    assert resumed.unchanged == BATCH
    assert resumed.added == count - BATCH
    assert len(stored_paths(settings)) == count
    for i in (0, count // 2, count - 1):
        assert search_paths(settings, f"marker{i:04d}") == [f"n{i // 100:02d}/note-{i:04d}.md"]
    assert _keyword_current(settings)


def test_cancel_during_keyword_build_is_a_clean_stop(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    settings = make_settings(vault)
    cancel = threading.Event()
    # A first index grows its keyword index as it reads; a whole keyword build runs when
    # the keyword index is gone beside a full store.
    sync(settings)
    shutil.rmtree(settings.index_dir() / KeywordIndex.DIRNAME)

    def stop_at_keyword(event: SyncProgress) -> None:
        if event.phase == "keyword":
            cancel.set()

    stopped = sync(settings, cancel=cancel, progress=stop_at_keyword)
    assert stopped.cancelled is True
    assert not (settings.index_dir() / "keyword.new").exists()
    # The store is complete; the keyword index is made from it when needed.
    assert search_paths(settings, "albatross") == ["alpha.md"]
    again = sync(settings)
    assert again.cancelled is False
    assert _keyword_current(settings)


def _committed_files(db: Path) -> int:
    try:
        with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM files").fetchone()[0])
    except sqlite3.Error:
        return 0  # not created yet, or the schema is being written


def _start_index(vault: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*APUS, "--vault", str(vault), "memory", "index", *args],
        env=cli_env(),
        stdout=subprocess.PIPE if args else subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _wait_for_commit(proc: subprocess.Popen[str], db: Path, above: int) -> int:
    """Poll the store until more than `above` files are committed (or the process ends)."""
    committed = above
    while proc.poll() is None and committed <= above:
        committed = _committed_files(db)
        time.sleep(0.01)
    return committed


@pytest.mark.slow
def test_interrupted_and_killed_syncs_leave_a_usable_index(tmp_path: Path) -> None:
    count = 4 * BATCH  # room for a batch before Ctrl-C, one before the kill, and more after
    vault = _numbered_vault(tmp_path / "vault", count)
    settings = make_settings(vault)
    db = settings.index_dir() / "apus.sqlite"

    # Ctrl-C: a clean stop that keeps the committed batches and says so.
    proc = _start_index(vault, "--json")
    try:
        _wait_for_commit(proc, db, 0)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert json.loads(out)["cancelled"] is True
    after_ctrl_c = len(stored_paths(settings))
    assert BATCH <= after_ctrl_c < count

    # SIGKILL: no chance to clean up at all.
    proc = _start_index(vault)
    try:
        committed = _wait_for_commit(proc, db, after_ctrl_c)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the sync ended before it could be killed"
    assert committed > after_ctrl_c

    # Search answers from what was committed (the keyword index is made from SQLite).
    found = run_json("--vault", vault, "memory", "search", "--json", "kestrel", "-n", "5")
    assert len(found["results"]) == 5
    committed_paths = stored_paths(settings)
    assert len(committed_paths) < count
    assert {hit["path"] for hit in found["results"]} <= committed_paths
    assert _keyword_current(settings)

    # The next sync picks up where the killed one stopped and completes.
    report = run_json("--vault", vault, "memory", "index", "--json")
    assert report["files"] == count
    assert report["unchanged"] == len(committed_paths)
    assert report["added"] == count - len(committed_paths)
    status = run_json("--vault", vault, "memory", "status", "--json")
    assert status["files"] == count
    assert status["keyword"] == "ready"
    for i in (0, count // 2 + 1, count - 1):
        assert search_paths(settings, f"marker{i:04d}") == [f"n{i // 100:02d}/note-{i:04d}.md"]


def test_second_writer_gets_a_clear_busy_error(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    settings = make_settings(vault)
    sync(settings)
    with WriterLock(settings.index_dir(), settings.vault_path()):
        with pytest.raises(IndexBusyError) as caught:
            sync(settings)
        assert f"pid {os.getpid()}" in caught.value.reason

        result = run_apus("--vault", vault, "memory", "index", expect=1)
        assert "Another Apus process" in result.stderr
        assert f"pid {os.getpid()}" in result.stderr
        assert "Fix:" in result.stderr
        assert "Traceback" not in result.stderr

        # Readers never wait for the writer.
        found = run_json("--vault", vault, "memory", "search", "--json", "albatross")
        assert [hit["path"] for hit in found["results"]] == ["alpha.md"]
    assert sync(settings).unchanged == 3  # the lock is free again


def _garbage(path: Path) -> None:
    path.write_bytes(os.urandom(max(path.stat().st_size, 64)))


def _garbage_inside_segments(keyword_dir: Path, part: str) -> None:
    """Overwrite one kind of sub-file inside each compound segment, leaving its directory.

    The index still opens and counts its documents; only reading that part fails.
    """
    for segment in keyword_dir.glob("*.seg"):
        with open(segment, "rb") as handle:
            layout = CompoundStorage(StructFile(handle), use_mmap=False)._dir
        data = bytearray(segment.read_bytes())
        for name, entry in layout.items():
            if name.endswith(part):
                start, length = entry["offset"], entry["length"]
                data[start : start + length] = b"\xab" * length
        segment.write_bytes(bytes(data))


def _damage(kind: str, keyword_dir: Path, saved: Path) -> None:
    files = [p for p in keyword_dir.iterdir() if p.name != STAMP_FILE]
    if kind == "garbage-all":
        for path in files:
            _garbage(path)
    elif kind == "garbage-segments":
        for path in files:
            if path.suffix == ".seg":
                _garbage(path)
    elif kind == "garbage-postings":
        _garbage_inside_segments(keyword_dir, ".pst")
    elif kind == "garbage-stored-fields":
        _garbage_inside_segments(keyword_dir, "_stored.col")
    elif kind == "toc-deleted":
        for path in files:
            if path.suffix == ".toc":
                path.unlink()
    elif kind == "emptied":
        for path in keyword_dir.iterdir():
            path.unlink()
    elif kind == "dir-missing":
        shutil.rmtree(keyword_dir)
    elif kind == "stamp-garbage":
        (keyword_dir / STAMP_FILE).write_bytes(b"\x00not json")
    elif kind == "analyzer-changed":
        stamp = json.loads((keyword_dir / STAMP_FILE).read_text(encoding="utf-8"))
        stamp["analyzer"] = -1
        (keyword_dir / STAMP_FILE).write_text(json.dumps(stamp), encoding="utf-8")
    elif kind == "stale":
        # An older, intact index whose stamp is behind the store (a crash between the two).
        shutil.rmtree(keyword_dir)
        shutil.copytree(saved, keyword_dir)
    else:
        raise AssertionError(kind)


DAMAGE = [
    "garbage-all",
    "garbage-segments",
    "garbage-postings",
    "garbage-stored-fields",
    "toc-deleted",
    "emptied",
    "dir-missing",
    "stamp-garbage",
    "analyzer-changed",
    "stale",
]


# Damage that only shows when a search reads the broken part.
LATENT_DAMAGE = {"garbage-postings", "garbage-stored-fields"}


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_keyword_index_is_rebuilt_from_sqlite(tmp_path: Path, kind: str) -> None:
    vault = _small_vault(tmp_path / "vault")
    settings = make_settings(vault)
    sync(settings)
    keyword_dir = settings.index_dir() / KeywordIndex.DIRNAME
    saved = tmp_path / "saved-keyword"
    shutil.copytree(keyword_dir, saved)
    write_note(vault, "late.md", "# Late\n\nA late entry about the albatross and a shearwater.\n")
    sync(settings)
    expected = [(hit.path, hit.chunk_id) for hit in search(settings, "albatross")]
    assert {path for path, _ in expected} == {"alpha.md", "late.md"}

    _damage(kind, keyword_dir, saved)
    if kind not in LATENT_DAMAGE:
        assert not _keyword_current(settings)
        assert collect_status(settings).keyword != "ready"

    assert [(hit.path, hit.chunk_id) for hit in search(settings, "albatross")] == expected
    assert search_paths(settings, "shearwater") == ["late.md"]
    assert _keyword_current(settings)


def test_damaged_keyword_index_through_the_cli(tmp_path: Path) -> None:
    vault = _small_vault(tmp_path / "vault")
    index_vault(vault)
    settings = make_settings(vault)
    keyword_dir = settings.index_dir() / KeywordIndex.DIRNAME
    _damage("garbage-all", keyword_dir, keyword_dir)
    found = run_json("--vault", vault, "memory", "search", "--json", "cormorant")
    assert [hit["path"] for hit in found["results"]] == ["sub/gamma.md"]
    # A sync over a damaged index repairs it too, also when only updating it shows the damage.
    for kind in ("garbage-segments", "garbage-postings"):
        _damage(kind, keyword_dir, keyword_dir)
        # One marker word: with English stems, "postings" alone would also find "post".
        marker = kind.replace("-", "")
        write_note(vault, "alpha.md", f"# Alpha\n\nThe albatross, seen again ({marker}).\n")
        report = run_json("--vault", vault, "memory", "index", "--json")
        assert report["changed"] == 1
        assert report["keyword_rebuilt"] is True
        assert _keyword_current(settings)
        assert search_paths(settings, marker) == ["alpha.md"]
        assert search_paths(settings, "cormorant") == ["sub/gamma.md"]


def test_a_database_without_its_schema_reads_as_not_indexed(tmp_path: Path) -> None:
    # The first sync creates the file before the schema: a status reader in that moment
    # sees "not indexed yet", not "no such table".
    settings = make_settings(_small_vault(tmp_path / "vault"))
    index_dir = settings.index_dir()
    index_dir.mkdir(parents=True)
    sqlite3.connect(index_dir / "apus.sqlite").close()
    status = collect_status(settings)
    assert not status.indexed
    assert search(settings, "albatross") == []
    sync(settings)
    assert collect_status(settings).indexed
    assert search_paths(settings, "albatross") == ["alpha.md"]


def test_status_read_while_the_first_index_is_built_never_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(_numbered_vault(tmp_path / "vault", 300))
    # The build stops at every point of its work (lock taken, each progress event, done):
    # a status is read at each, so reads overlap every stage of it on any machine. A
    # reader polling all along meets it between those points too.
    hold = Hold(tmp_path / "hold")
    for name, value in hold.env(1).items():
        monkeypatch.setenv(name, value)
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> IndexStatus | None:
        try:
            return collect_status(settings)
        except BaseException as exc:  # every failure is the finding
            errors.append(exc)
            return None

    def poll() -> None:
        while not done.is_set():
            read()

    def build() -> None:
        try:
            sync(settings)
        except BaseException as exc:
            errors.append(exc)

    reader = threading.Thread(target=poll)
    builder = threading.Thread(target=build)
    reader.start()
    builder.start()
    read_at: list[tuple[str, int | None]] = []
    try:
        point = {"n": 0, "phase": ""}
        while point["phase"] != "end":
            point = hold.wait_held(point["n"], ended=lambda: not builder.is_alive())
            status = read()
            read_at.append((point["phase"], None if status is None else status.files))
            hold.release(point["n"])
    finally:
        hold.release()
        builder.join()
        done.set()
        reader.join()
    assert errors == []
    phases = [phase for phase, _ in read_at]
    assert {"start", "scan", "index", "end"} <= set(phases), phases
    assert read_at[0] == ("start", 0) and read_at[-1] == ("end", 300)
    assert collect_status(settings).files == 300
