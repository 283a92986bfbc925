"""A disk that fills up while an index is rebuilt: one clear error, the old index kept.

The keyword index is rebuilt in `keyword.new` and a forced rebuild in `rebuild/`: when the
disk fills up half-way, the error says so (not Whoosh's own "writer is closed"), the
half-written folder is removed, and the index in place keeps answering.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from apus.config import Settings
from apus.index.keyword import KeywordIndex
from apus.index.sqlite import IndexWriteError
from apus.index.store import Store
from apus.indexing.shadow import shadow_dir
from support.vaults import (
    cli_env,
    generation,
    make_settings,
    run_apus,
    run_json,
    search_paths,
    sync,
    write_note,
)

Fill = Callable[[int], None]


def _fill(disk: Path) -> Fill:
    """Fill `disk` with a filler file until only `room` bytes are left (0: empty it)."""

    def fill(room: int) -> None:
        filler = disk / "filler"
        filler.unlink(missing_ok=True)
        if room <= 0:
            return
        info = os.statvfs(disk)
        size = info.f_bavail * info.f_frsize - room
        with open(filler, "wb") as handle:
            handle.truncate(0)
            for _ in range(size // (1 << 20)):
                handle.write(b"\0" * (1 << 20))
            handle.write(b"\0" * (size % (1 << 20)))

    return fill


def _vault(root: Path, notes: int = 200) -> Path:
    rng = random.Random(5)
    words = ["".join(rng.choice("bcdfghklmnprstvz") for _ in range(7)) for _ in range(4000)]
    for number in range(notes):
        body = " ".join(rng.choice(words) for _ in range(200))
        write_note(root, f"n{number:03d}.md", f"# Note {number}\n\nmarker{number} {body}\n")
    return root


def _indexed_on(disk: Path, tmp_path: Path) -> tuple[Path, Settings, dict[str, str]]:
    vault = _vault(tmp_path / "vault")
    index_dir = disk / "index"
    settings = make_settings(vault, memory__search__store__path=str(index_dir))
    sync(settings)
    return vault, settings, cli_env(APUS_MEMORY__SEARCH__STORE__PATH=str(index_dir))


def _assert_one_clear_error(stderr: str, *words: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 2, stderr
    assert lines[0].startswith("Error: ") and lines[1].startswith("Fix: "), stderr
    for word in words:
        assert word in lines[0], (word, stderr)


def test_keyword_rebuild_on_a_full_disk_raises_index_write_error(
    tmp_path: Path, small_disk: Path
) -> None:
    _, settings, _ = _indexed_on(small_disk, tmp_path)
    index_dir = settings.index_dir()
    fill = _fill(small_disk)
    fill(64 * 1024)
    store = Store(index_dir)
    keyword = KeywordIndex(index_dir)
    try:
        with pytest.raises(IndexWriteError, match="is full") as raised:
            keyword.rebuild(store)
        assert isinstance(raised.value.__cause__, OSError)
        assert not (index_dir / "keyword.new").exists()
        # The index in place was not touched: it still answers.
        assert keyword.state().usable
        assert search_paths(settings, "marker42") == ["n042.md"]
        fill(0)
        keyword.rebuild(store)
    finally:
        keyword.close()
        store.close()
    assert search_paths(settings, "marker42") == ["n042.md"]


def test_a_full_disk_while_search_repairs_the_keyword_index_is_one_clear_error(
    tmp_path: Path, small_disk: Path
) -> None:
    vault, settings, env = _indexed_on(small_disk, tmp_path)
    index_dir = settings.index_dir()
    shutil.rmtree(index_dir / KeywordIndex.DIRNAME)  # search rebuilds it from the store
    fill = _fill(small_disk)
    fill(64 * 1024)

    result = run_apus("--vault", vault, "memory", "search", "marker42", env=env, expect=1)
    _assert_one_clear_error(result.stderr, "is full")
    assert not (index_dir / "keyword.new").exists()

    fill(0)
    found = run_json("--vault", vault, "memory", "search", "--json", "marker42", env=env)
    assert [hit["path"] for hit in found["results"]] == ["n042.md"]


def test_a_full_disk_during_a_forced_rebuild_keeps_the_old_index(
    tmp_path: Path, small_disk: Path
) -> None:
    vault, settings, env = _indexed_on(small_disk, tmp_path)
    index_dir = settings.index_dir()
    before = (generation(settings), KeywordIndex(index_dir).state())
    fill = _fill(small_disk)
    # Room for part of a second index, not all of it: the rebuild fails beside the old one.
    used = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file())
    fill(used // 2)

    result = run_apus("--vault", vault, "memory", "index", "--force", env=env, expect=1)
    _assert_one_clear_error(result.stderr, "is full")
    assert not shadow_dir(index_dir).exists()
    found = run_json("--vault", vault, "memory", "search", "--json", "marker42", env=env)
    assert [hit["path"] for hit in found["results"]] == ["n042.md"]
    assert run_json("--vault", vault, "memory", "status", "--json", env=env)["files"] == 200
    assert (generation(settings), KeywordIndex(index_dir).state()) == before
    print(result.stderr)

    fill(0)
    run_apus("--vault", vault, "memory", "index", "--force", env=env)
    found = run_json("--vault", vault, "memory", "search", "--json", "marker42", env=env)
    assert [hit["path"] for hit in found["results"]] == ["n042.md"]
