"""One bad note never stops a vault: values no reader expected, a note the store refuses.

Every note here goes through the real sync (SQLite, Whoosh) and the real CLI; the faults are
in the notes themselves, or in the database (a trigger that refuses one row).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from support.vaults import (
    cli_env,
    make_settings,
    run_apus,
    run_json,
    search_paths,
    stored_paths,
    sync,
    write_note,
)

HUGE_IMPORTANCE = "---\nimportance: 1" + "0" * 400 + "\n---\n# Ledger\n\nThe walnut ledger.\n"
HUGE_TAG = "---\ntags: [0x" + "f" * 4000 + "]\n---\n# Tagged\n\nThe copper kettle.\n"
HUGE_DECIMAL = "---\nimportance: 1" + "0" * 5000 + "\n---\n# Decimal\n\nThe brass anchor.\n"
GOOD = "---\nimportance: 7\ntags: [home]\n---\n# Garden\n\nTomatoes on the balcony.\n"


def _bad_vault(root: Path) -> Path:
    write_note(root, "good.md", GOOD)
    write_note(root, "ledger.md", HUGE_IMPORTANCE)
    write_note(root, "tagged.md", HUGE_TAG)
    write_note(root, "decimal.md", HUGE_DECIMAL)
    return root


def test_huge_integers_in_frontmatter_leave_out_the_field_not_the_vault(tmp_path: Path) -> None:
    vault = _bad_vault(tmp_path / "vault")
    result = run_apus("--vault", vault, "memory", "index")
    assert "without a bad part" in result.stdout, result.stdout
    status = run_json("--vault", vault, "memory", "status", "--json")
    assert status["files"] == 4 and status["skipped"] == []
    problems = {problem["path"]: problem for problem in status["problems"]}
    assert set(problems) == {"ledger.md", "tagged.md", "decimal.md"}
    assert "`importance` left out" in problems["ledger.md"]["reason"]
    assert "about 401 digits" in problems["ledger.md"]["reason"]
    assert "`tags` left out" in problems["tagged.md"]["reason"]
    assert "frontmatter left out" in problems["decimal.md"]["reason"]
    assert all(p["indexed"] and "frontmatter" in p["fix"] for p in problems.values())
    assert status["lastSync"]["ok"] is True and status["lastSync"]["error"] is None
    # Every note is searchable; the good one kept its fields.
    settings = make_settings(vault)
    assert search_paths(settings, "walnut") == ["ledger.md"]
    assert search_paths(settings, "kettle") == ["tagged.md"]
    assert search_paths(settings, "tomatoes") == ["good.md"]
    good = run_json("--vault", vault, "memory", "search", "balcony", "--tag", "home", "--json")
    assert [hit["path"] for hit in good["results"]] == ["good.md"]

    # doctor names them, with the fix, and fails until they are fixed.
    doctor = run_apus("--vault", vault, "doctor", "--json", expect=1)
    assert "ledger.md" in doctor.stdout and "frontmatter" in doctor.stdout
    write_note(vault, "ledger.md", "---\nimportance: 3\n---\n# Ledger\n\nThe walnut ledger.\n")
    write_note(vault, "tagged.md", "# Tagged\n\nThe copper kettle.\n")
    write_note(vault, "decimal.md", "# Decimal\n\nThe brass anchor.\n")
    run_apus("--vault", vault, "memory", "index")
    assert run_json("--vault", vault, "memory", "status", "--json")["problems"] == []
    run_apus("--vault", vault, "doctor", expect=0)


def test_problems_survive_syncs_that_do_not_read_the_note_and_follow_a_rename(
    tmp_path: Path,
) -> None:
    vault = _bad_vault(tmp_path / "vault")
    settings = make_settings(vault)
    first = sync(settings)
    assert {p.path for p in first.problems} == {"ledger.md", "tagged.md", "decimal.md"}
    write_note(vault, "new.md", "# New\n\nA fresh note.\n")
    (vault / "ledger.md").rename(vault / "renamed-ledger.md")
    (vault / "decimal.md").unlink()
    second = sync(settings)
    assert second.renamed == 1 and second.added == 1
    assert {p.path for p in second.problems} == {"renamed-ledger.md", "tagged.md"}


def test_a_note_the_database_refuses_is_skipped_alone(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "first.md", "# First\n\nThe first note.\n")
    settings = make_settings(vault)
    sync(settings)
    # A real refusal by SQLite itself: a trigger aborts the insert of this one path.
    db = sqlite3.connect(settings.index_dir() / "apus.sqlite")
    with db:
        db.execute(
            "CREATE TRIGGER refuse_one BEFORE INSERT ON files WHEN new.path = 'refused.md' "
            "BEGIN SELECT RAISE(ABORT, 'this row is refused'); END"
        )
    db.close()
    write_note(vault, "refused.md", "# Refused\n\nThe refused note.\n")
    write_note(vault, "second.md", "# Second\n\nThe second note.\n")
    report = sync(settings)
    assert stored_paths(settings) == {"first.md", "second.md"}
    assert report.added == 1
    assert [s.rel_path for s in report.skipped] == ["refused.md"]
    assert "this row is refused" in report.skipped[0].reason
    problem = next(p for p in report.problems if p.path == "refused.md")
    assert not problem.indexed and "written to the index" in problem.reason and problem.fix
    assert search_paths(settings, "second") == ["second.md"]
    status = run_json("--vault", vault, "memory", "status", "--json", env=cli_env())
    skipped = status["skipped"]
    assert skipped[0]["path"] == "refused.md" and skipped[0]["fix"]
