"""The `apus` command line as scripts use it: version, help, and the --json contracts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from apus import __version__
from apus.cli import main
from apus.vault.text import fold, tokenize
from support.vaults import run_apus, run_json, write_note

HIT_FIELDS = {"path": str, "title": str, "start_line": int, "end_line": int, "snippet": str}


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths.extend(_command_paths(command, (*prefix, name)))
    return paths


def test_version() -> None:
    expected = f"apus, version {__version__}"
    assert run_apus("--version").stdout.strip() == expected
    assert run_apus("-V").stdout.strip() == expected
    # The installed console script, as a user runs it (the install puts it beside Python).
    script = Path(sys.executable).with_name("apus")
    assert script.is_file(), f"no console script at {script}"
    assert run_apus("--version", program=[str(script)]).stdout.strip() == expected


def test_top_level_help_lists_the_commands() -> None:
    result = run_apus("--help")
    assert result.stdout.startswith("Usage: apus")
    for name in ("memory", "--vault", "--config", "--version"):
        assert name in result.stdout


COMMANDS = _command_paths(main)


def test_every_command_is_listed() -> None:
    names = {" ".join(path) for path in COMMANDS}
    assert {"memory", "memory index", "memory search", "memory status"} <= names


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_help_on_every_command(path: tuple[str, ...]) -> None:
    for flag in ("--help", "-h"):
        result = CliRunner().invoke(main, [*path, flag], prog_name="apus")
        assert result.exit_code == 0, result.output
        assert result.output.startswith(f"Usage: apus {' '.join(path)}")


def _check_hit(vault: Path, hit: dict[str, object]) -> None:
    for field, kind in HIT_FIELDS.items():
        assert isinstance(hit[field], kind), (field, hit)
    assert isinstance(hit["score"], float | int)
    path = str(hit["path"])
    assert not path.startswith("/")
    assert "\\" not in path
    note = vault / path
    assert note.is_file()
    lines = note.read_text(encoding="utf-8").splitlines()
    start, end = int(hit["start_line"]), int(hit["end_line"])  # type: ignore[call-overload]
    assert 1 <= start <= end <= len(lines)
    assert hit["title"]


def test_json_contract_on_the_sample_vault(sample_vault: Path) -> None:
    vault = sample_vault.resolve()
    notes = sorted(p for p in vault.rglob("*.md"))
    report = run_json("--vault", vault, "memory", "index", "--json")
    assert report["files"] == len(notes)
    assert report["added"] == len(notes)

    found = run_json("--vault", vault, "memory", "search", "--json", "sourdough", "starter")
    assert found["results"]
    # Embeddings are off: a default (hybrid) search says it answered by keyword, and why.
    assert found["mode"] == "keyword"
    assert not found["legs"]["vector"]["ran"] and found["legs"]["vector"]["reason"]
    terms = {"sourdough", "starter"}
    for hit in found["results"]:
        _check_hit(vault, hit)
        marked = {fold(hit["snippet"][start:end]) for start, end in hit["highlights"]}
        assert marked <= terms
        if not marked:  # matched through its title or file name, not this passage
            assert terms & {token.term for token in tokenize(f"{hit['title']} {hit['path']}")}
    # MEMORY.md's own entry on the starter leads (the agent's word first), the note follows.
    first = found["results"][0]
    assert first["path"] == "MEMORY.md" and "starter" in first["snippet"]
    assert first["highlights"]
    assert "notes/sourdough.md" in [hit["path"] for hit in found["results"][:3]]

    # Limited, and non-ASCII through the shell and back (JSON keeps UTF-8 as is).
    cjk = run_apus("--vault", vault, "memory", "search", "--json", "-n", "1", "故宫").stdout
    assert "北京旅行计划" in cjk
    assert [hit["path"] for hit in json.loads(cjk)["results"]] == ["languages/北京旅行计划.md"]

    nothing = run_apus("--vault", vault, "memory", "search", "--json", "xylophonequartz")
    assert nothing.returncode == 0
    assert json.loads(nothing.stdout)["results"] == []

    status = run_json("--vault", vault, "memory", "status", "--json")
    assert status["vault"] == str(vault)
    assert status["files"] == len(notes)
    assert status["chunks"] >= len(notes)
    assert status["provider"] == "none"
    assert status["skipped"] == []
    assert status["keyword"] == "ready"
    assert status["index_bytes"] > 0
    assert status["last_sync"]


def test_human_output(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "birds/heron.md", "# Heron\n\nA grey heron fishing at dawn.\n")
    runner = CliRunner(env={"APUS_MEMORY__SEARCH__PROVIDER": "none"})
    args = ["--vault", str(vault), "memory"]

    indexed = runner.invoke(main, [*args, "index"], prog_name="apus")
    assert indexed.exit_code == 0, indexed.output
    assert "1 notes" in indexed.output

    found = runner.invoke(main, [*args, "search", "heron"], prog_name="apus")
    assert found.exit_code == 0, found.output
    assert "birds/heron.md:1-3" in found.output
    assert "A grey heron fishing at dawn." in found.output

    missing = runner.invoke(main, [*args, "search", "xylophonequartz"], prog_name="apus")
    assert missing.exit_code == 0
    assert "No matches." in missing.output

    status = runner.invoke(main, [*args, "status"], prog_name="apus")
    assert status.exit_code == 0, status.output
    assert str(vault) in status.output
    assert "1 files" in status.output
    assert "none" in status.output


def test_search_before_any_index_says_what_to_run(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "a.md", "# A\n\nsome text\n")
    result = run_json("--vault", vault, "memory", "search", "--json", "text")
    assert result["results"] == []
    assert result["legs"]["keyword"]["ran"] is False
    assert "apus memory index" in result["legs"]["keyword"]["reason"]


def test_missing_vault_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = run_apus("--vault", missing, "memory", "index", expect=1)
    assert str(missing) in result.stderr
    assert "Fix:" in result.stderr
    assert "Traceback" not in result.stderr
    assert not missing.exists()
