"""A first index answers by words from its first committed batch, and says it is not done.

The sync runs as `apus memory index` in its own process, stopped by the test hook at a point
of its work (after the first batch of 500 notes): what a one-shot `apus memory search` in
another process sees there is what a user sees on any machine, however fast or loaded.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from apus.index.keyword import KeywordIndex
from apus.index.store import Store
from apus.indexing.reading_progress import FILE_NAME
from support.holds import Hold, held_index, start_held_index
from support.vaults import cli_env, index_vault, make_settings, run_apus, run_json, write_note

NOTES = 1500  # three batches of 500


def _vault(root: Path) -> Path:
    for i in range(NOTES):
        write_note(
            root, f"n{i // 100:02d}/note-{i:04d}.md", f"# Note {i}\n\nA wren, marker{i:04d}.\n"
        )
    return root


def _stored_paths(index_dir: Path) -> list[str]:
    """The notes the store has committed so far (read-only, beside the writer)."""
    db = index_dir / Store.FILENAME
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5) as conn:
        return [row[0] for row in conn.execute("SELECT path FROM files ORDER BY path")]


def _search(vault: Path, *words: str) -> subprocess.CompletedProcess[str]:
    return run_apus("--vault", vault, "memory", "search", "--mode", "keyword", *words)


def test_keyword_search_answers_from_the_first_batch_of_a_first_index(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    index_dir = make_settings(vault).index_dir()
    hold = Hold(tmp_path / "hold")
    with held_index(vault, hold, "index:500"):  # the first batch is committed there
        stored = _stored_paths(index_dir)
        assert len(stored) == 500
        first = stored[0]
        marker = f"marker{first[-7:-3]}"
        found = run_json(
            "--vault", vault, "memory", "search", "--json", "--mode", "keyword", marker
        )
        assert [hit["path"] for hit in found["results"]] == [first]
        # It says the notes are still being read, and how far.
        assert found["indexing"]["phase"] == "Reading notes"
        assert (found["indexing"]["done"], found["indexing"]["total"]) == (500, NOTES)
        unread = next(
            f"n{i // 100:02d}/note-{i:04d}.md"
            for i in range(NOTES)
            if f"n{i // 100:02d}/note-{i:04d}.md" not in set(stored)
        )
        missing = _search(vault, f"marker{unread[-7:-3]}")
        assert "No matches" in missing.stdout
        assert "Still indexing: Reading notes 500 of 1,500" in missing.stderr
        assert "read so far" in missing.stderr
    # Whole: every note is found, nothing says "indexing", the progress file is gone.
    done = run_json("--vault", vault, "memory", "search", "--json", "--mode", "keyword", "wren")
    assert "indexing" not in done
    assert (
        len(
            run_json("--vault", vault, "memory", "search", "--json", "-n", "200", "wren")["results"]
        )
        == 200
    )
    assert not (index_dir / FILE_NAME).exists()
    state = KeywordIndex(index_dir).state()
    assert state.usable
    marker_hits = run_json(
        "--vault", vault, "memory", "search", "--json", "--mode", "keyword", "marker1499"
    )
    assert [hit["path"] for hit in marker_hits["results"]] == ["n14/note-1499.md"]


def test_a_killed_first_index_is_not_reported_as_still_running(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    index_dir = make_settings(vault).index_dir()
    hold = Hold(tmp_path / "hold")
    hold.kill_held(start_held_index(vault, hold, "index:500"))
    assert (index_dir / FILE_NAME).exists()  # left behind by the killed process
    found = run_json("--vault", vault, "memory", "search", "--json", "--mode", "keyword", "wren")
    assert found["results"] and "indexing" not in found
    # The next sync finishes the index from what was committed.
    run_apus("--vault", vault, "memory", "index")
    assert len(_stored_paths(index_dir)) == NOTES
    hits = run_json(
        "--vault", vault, "memory", "search", "--json", "--mode", "keyword", "marker1499"
    )
    assert [hit["path"] for hit in hits["results"]] == ["n14/note-1499.md"]


def test_time_words_in_a_cli_query_become_dates(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "memory/2026-11-24.md", "# Tuesday\n\nWe chose the blue tent.\n")
    write_note(vault, "memory/2026-10-02.md", "# October\n\nWe chose the green tent.\n")
    index_vault(vault)
    env = cli_env(APUS_TODAY="2026-12-02")
    args = ("--vault", vault, "memory", "search", "--json", "--mode", "keyword")
    dated = run_json(*args, "which tent did we choose last week", env=env)
    assert dated["query"] == "which tent did we choose"
    assert dated["timeWindow"] == {
        "since": "2026-11-23",
        "until": "2026-11-29",
        "text": "last week",
        "source": "query",
        "widened": False,
    }
    assert [hit["path"] for hit in dated["results"]] == ["memory/2026-11-24.md"]
    # Nothing dated then: any date, and it says so.
    empty = run_json(*args, "which tent did we choose yesterday", env=env)
    assert empty["timeWindow"]["widened"] is True
    assert {hit["path"] for hit in empty["results"]} == {
        "memory/2026-11-24.md",
        "memory/2026-10-02.md",
    }
    said = run_apus("--vault", vault, "memory", "search", "tent", "yesterday", env=env)
    assert "nothing is dated then" in said.stderr
    # Explicit dates win; --no-time-words searches the words as written.
    literal = run_json(*args, "--no-time-words", "tent last week", env=env)
    assert "timeWindow" not in literal and literal["query"] == "tent last week"
    given = run_json(*args, "--since", "2026-10-01", "tent last week", env=env)
    assert "timeWindow" not in given


def test_a_sync_that_only_looks_for_changes_is_not_indexing(tmp_path: Path) -> None:
    """Another process's sync scanning the vault says "still indexing" over a first index
    only: over an index a finished sync left complete (a second server starting, a one-shot
    `apus memory index`), looking for changes builds nothing, and every note is found."""
    vault = tmp_path / "vault"
    for i in range(3):
        write_note(vault, f"notes/n{i}.md", f"# Note {i}\n\nA wren, marker{i}.\n")
    keyword_search = ("--vault", vault, "memory", "search", "--json", "--mode", "keyword", "wren")

    def held_at_scan(hold: Hold) -> tuple[dict[str, Any], dict[str, Any]]:
        """A search's and the status's answers while an index run stands at its scan."""
        with held_index(vault, hold, "scan:0"):
            answers = (
                run_json(*keyword_search),
                run_json("--vault", vault, "memory", "status", "--json"),
            )
        return answers

    first, first_status = held_at_scan(Hold(tmp_path / "first"))
    assert first["indexing"]["phase"] == "Scanning notes" and not first["results"]
    assert "being built by another Apus process (Scanning notes" in first_status["keyword"]

    again, again_status = held_at_scan(Hold(tmp_path / "again"))
    assert "indexing" not in again and len(again["results"]) == 3
    assert "another Apus process" not in again_status["keyword"]
