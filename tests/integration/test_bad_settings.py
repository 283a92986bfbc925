"""Bad settings and a hostile machine: one clear line and a fix, exit 1, nothing written.

A config.toml in the wrong encoding or nested absurdly deep, a notes folder that is not
one (missing, a device, a symlink loop, not searchable), an index folder replaced by a
file, a disk that fills up during `index`.
"""

from __future__ import annotations

import codecs
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from apus.config import load_settings
from apus.errors import VaultError
from support.tmpfs import mounted_tmpfs
from support.unprivileged import nobody_home, run_as_nobody, shared_folder, unprivileged_apus
from support.vaults import (
    cli_env,
    index_vault,
    make_settings,
    run_apus,
    run_json,
    vault_digest,
    write_note,
)

COMMANDS = [
    ("memory", "status"),
    ("memory", "search", "heron"),
    ("memory", "recall", "deploy the blog"),
    ("memory", "index"),
]


def _assert_one_clear_error(stderr: str, *words: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 2, stderr
    assert lines[0].startswith("Error: ") and lines[1].startswith("Fix: "), stderr
    for word in words:
        assert word in lines[0], (word, stderr)


def _data_written(env: dict[str, str]) -> list[str]:
    data = Path(env["XDG_DATA_HOME"])
    return sorted(str(p.relative_to(data)) for p in data.rglob("*"))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "heron.md", "# Heron\n\nThe heron waits in the reeds.\n")
    return root


# --- config.toml --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("vault = 'caf\u00e9'\n".encode("latin-1"), ("is not UTF-8", "0xe9", "line 1")),
        (codecs.BOM_UTF16_LE + "vault = 'x'\n".encode("utf-16-le"), ("UTF-16",)),
        (codecs.BOM_UTF16_BE + "vault = 'x'\n".encode("utf-16-be"), ("UTF-16",)),
        (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", ("nests", "too deeply")),
    ],
    ids=["latin-1", "utf-16-le-bom", "utf-16-be-bom", "arrays-5000-deep"],
)
def test_a_config_file_apus_cannot_read_is_one_clear_error(
    tmp_path: Path, vault: Path, content: bytes, words: tuple[str, ...]
) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(content)
    env = cli_env()
    for command in COMMANDS:
        result = run_apus("--config", config, "--vault", vault, *command, env=env, expect=1)
        _assert_one_clear_error(result.stderr, str(config), *words)
    assert _data_written(env) == []
    assert config.read_bytes() == content


def test_a_utf8_bom_in_config_is_accepted(tmp_path: Path, vault: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(codecs.BOM_UTF8 + f"vault = '{vault}'\n".encode())
    assert load_settings(config_file=config).vault_path() == vault.resolve()


def test_an_environment_value_nested_too_deeply_is_taken_as_text(vault: Path) -> None:
    settings = load_settings(
        environ={"APUS_TUI__THEME": "[" * 5000}, overrides={"vault": str(vault)}
    )
    assert settings.tui.theme == "[" * 5000


# --- the notes folder ---------------------------------------------------------------------


def _loop(tmp_path: Path) -> Path:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    return loop


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda tmp: tmp / "nonexistent", ("does not exist",)),
        (lambda tmp: Path("/dev/null"), ("/dev/null is a device, not a folder",)),
    ],
    ids=["missing", "dev-null"],
)
def test_a_vault_that_is_not_a_folder_is_one_clear_error(
    tmp_path: Path, make: object, words: tuple[str, ...]
) -> None:
    target = make(tmp_path)  # type: ignore[operator]
    env = cli_env()
    for command in COMMANDS:
        result = run_apus("--vault", target, *command, env=env, expect=1)
        _assert_one_clear_error(result.stderr, "The notes folder", *words)
    assert _data_written(env) == []


def test_a_vault_gone_after_indexing_is_still_searched_but_not_indexed(
    tmp_path: Path, vault: Path
) -> None:
    index_vault(vault)
    vault.rename(tmp_path / "unplugged")

    found = run_json("--vault", vault, "memory", "search", "--json", "heron")
    assert [hit["path"] for hit in found["results"]] == ["heron.md"]
    result = run_apus("--vault", vault, "memory", "index", expect=1)
    _assert_one_clear_error(result.stderr, "does not exist")


def test_a_vault_that_is_a_symlink_loop_in_config_is_one_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"vault = '{_loop(tmp_path)}'\n", encoding="utf-8")
    env = cli_env()
    for command in COMMANDS:
        result = run_apus("--config", config, *command, env=env, expect=1)
        _assert_one_clear_error(result.stderr, "is a symlink loop")
    assert _data_written(env) == []


@pytest.mark.parametrize(
    ("make", "words"),
    [(lambda tmp: "", "empty path"), (_loop, "is a symlink loop")],
    ids=["empty", "symlink-loop"],
)
def test_a_vault_flag_that_names_no_folder_is_one_clear_error(
    tmp_path: Path, make: object, words: str
) -> None:
    target = make(tmp_path)  # type: ignore[operator]
    env = cli_env()
    for command in COMMANDS:
        result = run_apus("--vault", target, *command, env=env, expect=1)
        _assert_one_clear_error(result.stderr, "The notes folder", words)
    assert _data_written(env) == []


def test_the_vault_check_names_each_problem(tmp_path: Path) -> None:
    for raw, words in [
        ("  ", "empty path"),
        (str(write_note(tmp_path, "note.md", "# x\n")), "is a file, not a folder"),
        (str(_loop(tmp_path)), "symlink loop"),
        (os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"), "caf\\xe9 has a name that is not"),
    ]:
        settings = load_settings(environ={}, overrides={"vault": raw})
        with pytest.raises(VaultError, match="The notes folder") as caught:
            settings.vault_path()
        assert words in caught.value.reason


def test_a_vault_without_search_permission_is_one_clear_error() -> None:
    apus = unprivileged_apus()
    with shared_folder() as root:
        env = nobody_home(root, cli_env())
        locked = root / "locked"
        write_note(locked, "heron.md", "# Heron\n\nThe heron waits.\n")
        locked.chmod(0o744)  # others may read the names but not open the notes
        for command in COMMANDS:
            result = run_as_nobody([*apus, "--vault", str(locked), *command], env)
            assert result.returncode == 1, result.stderr
            _assert_one_clear_error(result.stderr, "cannot be opened (permission denied)")
        assert not list((root / "home").rglob("indexes"))


# --- the index folder and the disk ----------------------------------------------------------


def test_an_index_folder_replaced_by_a_file_is_one_clear_error(vault: Path) -> None:
    index_vault(vault)
    index_dir = make_settings(vault).index_dir()
    for path in sorted(index_dir.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    index_dir.rmdir()
    index_dir.write_text("someone else's file\n", encoding="utf-8")

    for command in COMMANDS:
        result = run_apus("--vault", vault, *command, expect=1)
        _assert_one_clear_error(result.stderr, str(index_dir), "is not a folder")
    assert index_dir.read_text(encoding="utf-8") == "someone else's file\n"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KB tmpfs (mounting needs root); unmounted afterwards."""
    with mounted_tmpfs(tmp_path, "256k") as mount_point:
        yield mount_point


def test_a_full_disk_during_index_is_one_clear_error_and_loses_nothing(
    tmp_path: Path, small_disk: Path
) -> None:
    vault = tmp_path / "big-vault"
    for number in range(120):
        write_note(vault, f"n{number:03d}.md", f"# Note {number}\n\nmarker{number} " + "x" * 4000)
    before = vault_digest(vault)
    env = cli_env(APUS_MEMORY__SEARCH__STORE__PATH=str(small_disk / "index"))

    result = run_apus("--vault", vault, "memory", "index", env=env, expect=1)
    _assert_one_clear_error(result.stderr, "is full")
    assert vault_digest(vault) == before

    # With room again, the same command completes.
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    run_apus("--vault", vault, "memory", "index", env=env)
    found = run_json("--vault", vault, "memory", "search", "--json", "marker77", env=env)
    assert [hit["path"] for hit in found["results"]] == ["n077.md"]
