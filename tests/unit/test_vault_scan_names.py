"""File names that are not UTF-8: skipped and reported in a printable form, never fatal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from apus.vault.scan import scan_roots


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


def test_names_that_are_not_utf8_are_skipped_with_a_printable_path(vault: Path) -> None:
    _write(vault / "ok.md", "# ok\n")
    raw_vault = os.fsencode(vault)
    # Bytes as another system or an old archive may have written them (Latin-1 "é", 0xff).
    with open(os.path.join(raw_vault, b"bad\xff.md"), "wb") as handle:
        handle.write(b"# bad\n")
    os.mkdir(os.path.join(raw_vault, b"caf\xe9"))
    with open(os.path.join(raw_vault, b"caf\xe9", b"inner.md"), "wb") as handle:
        handle.write(b"# inner\n")
    with open(os.path.join(raw_vault, b"image\xff.png"), "wb") as handle:
        handle.write(b"\x89PNG")  # not a note: not reported at all

    result = scan_roots(vault)

    assert [f.rel_path for f in result.files] == ["ok.md"]
    reasons = {item.rel_path: item.reason for item in result.skipped}
    assert reasons == {
        "bad\\xff.md": "file name is not valid UTF-8 (rename it to index it)",
        "caf\\xe9": "folder name is not valid UTF-8 (rename it to index it)",
    }
    for item in result.skipped:  # storable and printable as they are
        item.rel_path.encode("utf-8")
        assert item.rel_path.isprintable()
