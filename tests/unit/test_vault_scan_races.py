"""A note swapped for another file between the scan and the read is not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apus.vault.scan import read_note_text, scan_roots


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


def test_a_symlink_flipped_outside_after_the_scan_is_not_read(tmp_path: Path, vault: Path) -> None:
    _write(vault / "store" / "blob.txt", "# Inside\n\nThe heron waits.\n")
    outside = _write(tmp_path / "outside" / "secret.md", "# Secret\n\nThe wolverine hides.\n")
    link = vault / "alias.md"
    link.symlink_to(vault / "store" / "blob.txt")
    [scanned] = scan_roots(vault).files
    assert scanned.rel_path == "alias.md"

    # Between the scan and the read, the link is pointed at a file outside the vault.
    flipped = vault / "alias.tmp"
    flipped.symlink_to(outside)
    os.replace(flipped, link)
    note = read_note_text(scanned.abs_path, expected_identity=scanned.identity)

    assert note.text is None
    assert note.skip_reason == "replaced by another file while being indexed"


def test_a_folder_swapped_for_a_symlink_after_the_scan_is_not_read(
    tmp_path: Path, vault: Path
) -> None:
    _write(vault / "sub" / "note.md", "# Note\n\nThe egret fishes.\n")
    _write(tmp_path / "outside" / "note.md", "# Secret\n\nThe wolverine hides.\n")
    [scanned] = scan_roots(vault).files
    os.rename(vault / "sub", tmp_path / "moved-away")
    (vault / "sub").symlink_to(tmp_path / "outside", target_is_directory=True)

    note = read_note_text(scanned.abs_path, expected_identity=scanned.identity)

    assert note.text is None
    assert note.skip_reason == "replaced by another file while being indexed"


def test_an_unchanged_note_reads_with_its_identity(vault: Path) -> None:
    _write(vault / "note.md", "# Note\n\nThe egret fishes.\n")
    [scanned] = scan_roots(vault).files
    note = read_note_text(scanned.abs_path, expected_identity=scanned.identity)
    assert note.text == "# Note\n\nThe egret fishes.\n"
