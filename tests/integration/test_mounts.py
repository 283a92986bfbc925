"""The scan stays on each root's device: a file system mounted inside the vault (here a real
tmpfs) is listed once and not walked, unless memory.search.sync.crossDevices says to."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.vaults import make_settings, run_json, stored_paths, sync, write_note


def _mount_tmpfs(target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip() or result.returncode}")


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A vault with a tmpfs mounted at `mnt/`, and a second tmpfs outside it."""
    vault = tmp_path / "vault"
    write_note(vault, "home.md", "# Home\n\nThe hearth.\n")
    inside, outside = vault / "mnt", tmp_path / "elsewhere"
    mounts: list[Path] = []
    try:
        for target in (inside, outside):
            _mount_tmpfs(target)
            mounts.append(target)
        for index in range(30):
            write_note(inside, f"deep/n{index}.md", f"# Mounted {index}\n\nThe mounted cellar.\n")
        write_note(outside, "extra.md", "# Extra\n\nThe attic.\n")
        yield vault, outside
    finally:
        for target in reversed(mounts):
            subprocess.run(["umount", "-l", str(target)], check=False)


def test_a_mount_inside_the_vault_is_listed_once_and_not_walked(
    mounted: tuple[Path, Path],
) -> None:
    vault, _ = mounted
    settings = make_settings(vault)
    report = sync(settings)
    assert stored_paths(settings) == {"home.md"}
    assert [(s.rel_path, "another file system" in s.reason) for s in report.skipped] == [
        ("mnt", True)
    ]
    status = run_json("--vault", vault, "memory", "status", "--json")
    assert [item["path"] for item in status["skipped"]] == ["mnt"]
    assert "crossDevices" in status["skipped"][0]["reason"]


def test_the_setting_walks_mounts_and_an_extra_root_may_live_on_another_device(
    mounted: tuple[Path, Path],
) -> None:
    vault, outside = mounted
    crossing = make_settings(vault, memory__search__sync__crossDevices=True)
    sync(crossing)
    assert len(stored_paths(crossing)) == 31

    # A root of its own on another device is walked (its walk stays on that device).
    settings = make_settings(vault, memory__search__extraPaths=[str(outside)])
    report = sync(settings)
    assert any(path.endswith("extra.md") for path in stored_paths(settings))
    assert [s.rel_path for s in report.skipped] == ["mnt"]
