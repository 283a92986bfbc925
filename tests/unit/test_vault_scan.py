"""Walking the vault (ignore rules, symlinks, size guard, extra paths, cancel) and reading notes."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from apus.vault.scan import (
    MediaRule,
    ScanCancelled,
    ScanResult,
    read_note_text,
    scan_roots,
)
from support.unprivileged import call_unprivileged, shared_folder


def write(root: Path, rel_path: str, content: str | bytes = "# note\n") -> Path:
    path = root / rel_path
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def rel_paths(result: ScanResult) -> list[str]:
    return [scanned.rel_path for scanned in result.files]


def skipped(result: ScanResult) -> dict[str, str]:
    return {item.rel_path: item.reason for item in result.skipped}


@contextmanager
def unreadable(path: Path) -> Iterator[None]:
    """chmod 000 for the duration. What reads it runs through `call_unprivileged`, where the
    mode is enforced even when the tests run as root."""
    mode = path.stat().st_mode
    path.chmod(0)
    try:
        assert not call_unprivileged(lambda: os.access(path, os.R_OK))
        yield
    finally:
        path.chmod(mode)


@pytest.fixture
def shared_vault() -> Iterator[Path]:
    """An empty vault that `nobody` can reach (pytest's tmp_path is private to root)."""
    with shared_folder() as folder:
        root = folder / "vault"
        root.mkdir(mode=0o755)
        yield root


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


# --- what is found --------------------------------------------------------------------------


def test_finds_notes_sorted_with_stat_data(vault: Path) -> None:
    write(vault, "MEMORY.md")
    write(vault, "memory/2025-01-02.md")
    write(vault, "memory/2025-01-01.md")
    write(vault, "deep/a/b/c/Note.MARKDOWN")
    write(vault, "Upper.MD")
    write(vault, "image.png", b"\x89PNG")
    write(vault, "notes.txt")
    write(vault, "README")
    result = scan_roots(vault)
    assert rel_paths(result) == [
        "MEMORY.md",
        "Upper.MD",
        "deep/a/b/c/Note.MARKDOWN",
        "memory/2025-01-01.md",
        "memory/2025-01-02.md",
    ]
    assert result.skipped == []
    first = result.files[0]
    st = os.stat(vault / "MEMORY.md")
    assert first.abs_path == vault / "MEMORY.md"
    assert (first.size, first.mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_hidden_git_and_node_modules_are_ignored(vault: Path) -> None:
    write(vault, "keep.md")
    write(vault, ".hidden.md")
    write(vault, ".obsidian/workspace.md")
    write(vault, ".git/COMMIT_EDITMSG.md")
    write(vault, "node_modules/pkg/README.md")
    write(vault, "sub/node_modules/x.md")
    write(vault, "sub/.trash/old.md")
    write(vault, "sub/visible.md")
    assert rel_paths(scan_roots(vault)) == ["keep.md", "sub/visible.md"]


def test_hidden_vault_root_itself_is_scanned(tmp_path: Path) -> None:
    hidden_vault = tmp_path / ".openclaw" / "memory"
    write(hidden_vault, "MEMORY.md")
    assert rel_paths(scan_roots(hidden_vault)) == ["MEMORY.md"]


def test_apusignore_patterns(vault: Path) -> None:
    write(
        vault,
        ".apusignore",
        "# comment line\n\ndrafts/\n*.tmp.md\narchive/2023/*\n/top.md\nsecret.md\n!keep-me.md\n",
    )
    for rel_path in [
        "keep.md",
        "top.md",
        "sub/top.md",
        "drafts/a.md",
        "sub/drafts/b.md",
        "drafts.md",  # a file named like the folder pattern stays
        "x.tmp.md",
        "sub/y.tmp.md",
        "archive/2023/old.md",
        "archive/2023/deeper/older.md",
        "archive/2024/new.md",
        "secret.md",
        "sub/secret.md",
        "keep-me.md",
    ]:
        write(vault, rel_path)
    assert rel_paths(scan_roots(vault)) == [
        "archive/2024/new.md",
        "drafts.md",
        "keep-me.md",
        "keep.md",
        "sub/top.md",
    ]


# --- size guard and reading -----------------------------------------------------------------


def test_files_over_the_size_limit_are_skipped(vault: Path) -> None:
    write(vault, "small.md", "x" * 100)
    big = vault / "big.md"
    with big.open("wb") as handle:
        handle.truncate(int(7.3 * 1024 * 1024))  # sparse: cheap to make
    result = scan_roots(vault)
    assert rel_paths(result) == ["small.md"]
    assert skipped(result) == {"big.md": "larger than 5.0 MB limit (7.3 MB)"}
    result = scan_roots(vault, max_file_bytes=50)
    assert skipped(result)["small.md"] == "larger than 50 bytes limit (100 bytes)"


def test_read_plain_utf8_with_bom(vault: Path) -> None:
    raw = "\ufeff# Café\n東京\n".encode()
    note = read_note_text(write(vault, "bom.md", raw))
    assert note.text == "# Café\n東京\n"
    assert note.sha256 == hashlib.sha256(raw).hexdigest()
    assert note.skip_reason is None
    assert not note.replaced_invalid_utf8


def test_read_invalid_utf8_is_replaced(vault: Path) -> None:
    raw = b"caf\xe9 and \xff\xfe bytes\n"
    note = read_note_text(write(vault, "latin1.md", raw))
    assert note.text == "caf\ufffd and \ufffd\ufffd bytes\n"
    assert note.replaced_invalid_utf8
    assert note.skip_reason is None
    assert note.sha256 == hashlib.sha256(raw).hexdigest()


def test_read_binary_file_is_skipped(vault: Path) -> None:
    raw = b"PK\x03\x04\x00\x00binary"
    note = read_note_text(write(vault, "zip.md", raw))
    assert note.text is None
    assert note.skip_reason == "binary file"
    assert note.sha256 == hashlib.sha256(raw).hexdigest()


def test_nul_after_the_sniffed_prefix_is_still_text(vault: Path) -> None:
    raw = b"a" * 9000 + b"\x00"
    note = read_note_text(write(vault, "late-nul.md", raw))
    assert note.skip_reason is None
    assert note.text is not None


def test_read_over_limit_at_read_time(vault: Path) -> None:
    path = write(vault, "grew.md", "y" * 2000)
    note = read_note_text(path, max_file_bytes=1024)
    assert note.text is None
    assert note.skip_reason == "larger than 1.0 KB limit (2.0 KB)"


def test_read_missing_and_directory_paths(vault: Path) -> None:
    assert read_note_text(vault / "gone.md").skip_reason == "not found"
    folder = vault / "folder.md"
    folder.mkdir()
    note = read_note_text(folder)
    assert note.text is None
    assert note.skip_reason == "not a regular file"


# --- unreadable things ----------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_named_like_a_note_neither_hangs_nor_fails(vault: Path) -> None:
    write(vault, "ok.md")
    os.mkfifo(vault / "pipe.md")
    result = scan_roots(vault)
    assert rel_paths(result) == ["ok.md"]
    assert skipped(result) == {"pipe.md": "not a regular file"}
    note = read_note_text(vault / "pipe.md")  # would block forever if opened plainly
    assert note.text is None
    assert note.skip_reason == "not a regular file"


def test_dangling_symlink_is_skipped(vault: Path) -> None:
    write(vault, "ok.md")
    (vault / "gone.md").symlink_to(vault / "deleted.md")
    (vault / "gone-dir").symlink_to(vault / "deleted-dir")
    result = scan_roots(vault)
    assert rel_paths(result) == ["ok.md"]
    assert skipped(result) == {"gone.md": "broken symlink"}
    assert read_note_text(vault / "gone.md").skip_reason == "not found"


def test_unreadable_file_is_listed_then_skipped_when_read(shared_vault: Path) -> None:
    vault = shared_vault
    path = write(vault, "locked.md")
    with unreadable(path):
        result, note = call_unprivileged(lambda: (scan_roots(vault), read_note_text(path)))
        assert rel_paths(result) == ["locked.md"]
    assert note.text is None
    assert note.sha256 == ""
    assert note.skip_reason == "permission denied"


def test_unreadable_folder_is_skipped(shared_vault: Path) -> None:
    vault = shared_vault
    write(vault, "ok.md")
    write(vault, "locked/inside.md")
    with unreadable(vault / "locked"):
        result = call_unprivileged(lambda: scan_roots(vault))
    assert rel_paths(result) == ["ok.md"]
    assert skipped(result) == {"locked": "permission denied"}


# --- symlinks -------------------------------------------------------------------------------


def test_symlink_loops_terminate(vault: Path) -> None:
    write(vault, "a/note.md")
    (vault / "a" / "up").symlink_to(vault, target_is_directory=True)  # a/up -> vault
    (vault / "a" / "self").symlink_to(vault / "a" / "self")  # a/self -> itself
    (vault / "loop.md").symlink_to(vault / "loop.md")
    result = scan_roots(vault)
    assert rel_paths(result) == ["a/note.md"]
    reasons = skipped(result)
    assert reasons["a/up"] == "symlink to a folder already scanned"
    assert reasons["loop.md"] == "symlink loop"


def test_symlinks_outside_the_roots_are_not_followed(tmp_path: Path, vault: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "private.md")
    write(vault, "inside.md")
    (vault / "linked-dir").symlink_to(outside, target_is_directory=True)
    (vault / "linked.md").symlink_to(outside / "private.md")
    result = scan_roots(vault)
    assert rel_paths(result) == ["inside.md"]
    assert skipped(result) == {
        "linked-dir": "symlink points outside the scanned folders",
        "linked.md": "symlink points outside the scanned folders",
    }


def test_symlinks_inside_the_vault_do_not_duplicate_notes(vault: Path) -> None:
    write(vault, "real/n.md")
    write(vault, "real/sub/m.md")
    (vault / "a-alias").symlink_to(vault / "real", target_is_directory=True)
    (vault / "b-alias").symlink_to(vault / "real" / "sub", target_is_directory=True)
    (vault / "n-link.md").symlink_to(vault / "real" / "n.md")
    write(vault, "target/t.md")
    (vault / "real" / "to-target").symlink_to(vault / "target", target_is_directory=True)
    result = scan_roots(vault)
    # Real paths win over symlinked ones, whatever order the names sort in.
    assert rel_paths(result) == ["real/n.md", "real/sub/m.md", "target/t.md"]


def test_symlinked_note_inside_the_vault_is_followed(vault: Path) -> None:
    write(vault, "store/blob.txt", "# a note kept under another name\n")
    (vault / "alias.md").symlink_to(vault / "store" / "blob.txt")
    result = scan_roots(vault)
    assert rel_paths(result) == ["alias.md"]
    assert read_note_text(result.files[0].abs_path).text == "# a note kept under another name\n"


# --- extra paths ----------------------------------------------------------------------------


def test_extra_paths_inside_and_outside_the_vault(tmp_path: Path, vault: Path) -> None:
    write(vault, "MEMORY.md")
    write(vault, ".private/p.md")
    shared = tmp_path / "shared"
    write(shared, "x.md")
    write(shared, "deep/y.md")
    write(shared, ".hidden/z.md")
    single = write(tmp_path / "elsewhere", "single.md")
    result = scan_roots(
        vault,
        [
            shared,
            single,
            vault / "MEMORY.md",  # already found: kept once
            Path(".private"),  # relative to the vault; explicitly listed, so walked
            tmp_path / "missing",
            write(tmp_path, "notes.txt"),
        ],
    )
    assert rel_paths(result) == [
        "../elsewhere/single.md",
        "../shared/deep/y.md",
        "../shared/x.md",
        ".private/p.md",
        "MEMORY.md",
    ]
    assert skipped(result) == {
        "../missing": "not found",
        "../notes.txt": "not a Markdown file",
    }
    by_rel = {scanned.rel_path: scanned for scanned in result.files}
    assert by_rel["../shared/x.md"].abs_path == shared / "x.md"


def test_vault_symlink_into_an_extra_root_is_followed(tmp_path: Path, vault: Path) -> None:
    shared = tmp_path / "shared"
    write(shared, "x.md")
    (vault / "to-shared").symlink_to(shared, target_is_directory=True)
    result = scan_roots(vault, [shared])
    # Allowed (inside a root) and reported once, under the extra path's real location.
    assert rel_paths(result) == ["../shared/x.md"]


# --- errors, cancel, progress ---------------------------------------------------------------


def test_missing_or_file_vault_raises_clearly(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="vault folder not found"):
        scan_roots(tmp_path / "nope")
    with pytest.raises(NotADirectoryError, match="not a folder"):
        scan_roots(write(tmp_path, "file.md"))


def test_unreadable_vault_raises_clearly(shared_vault: Path) -> None:
    vault = shared_vault
    write(vault, "a.md")
    with unreadable(vault), pytest.raises(PermissionError, match="not readable"):
        call_unprivileged(lambda: scan_roots(vault))


def test_cancel_before_start(vault: Path) -> None:
    write(vault, "a.md")
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ScanCancelled):
        scan_roots(vault, cancel=cancel)


def test_progress_every_500_files_and_cancel_from_progress(vault: Path) -> None:
    for index in range(1200):
        write(vault, f"d{index % 3}/n{index:04d}.md", "")
    seen: list[int] = []
    result = scan_roots(vault, on_progress=seen.append)
    assert len(result.files) == 1200
    assert seen == [500, 1000, 1200]

    cancel = threading.Event()
    calls: list[int] = []

    def stop_at_first_report(count: int) -> None:
        calls.append(count)
        cancel.set()

    with pytest.raises(ScanCancelled):
        scan_roots(vault, cancel=cancel, on_progress=stop_at_first_report)
    assert calls == [500]


def test_media_files_are_listed_only_under_extra_paths(tmp_path: Path, vault: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(64)
    write(vault, "MEMORY.md")
    write(vault, "photo.png", png)  # the vault stays notes-only
    write(vault, "attachments/board.PNG", png)  # an extra path inside the vault
    write(vault, "attachments/sub/memo.mp3", b"ID3" + bytes(64))
    write(vault, "attachments/clip.gif", b"GIF89a")  # not a type any provider embeds
    outside = tmp_path / "media"
    write(outside, "big.wav", b"RIFF" + bytes(200))
    single = write(tmp_path / "one", "scan.jpg", b"\xff\xd8\xff" + bytes(8))
    rule = MediaRule(frozenset({".png", ".mp3", ".wav", ".jpg"}))
    roots = [Path("attachments"), outside, single]
    result = scan_roots(vault, roots, max_file_bytes=100, media=rule)
    assert rel_paths(result) == [
        "../media/big.wav",  # over maxFileBytes: media have the service's limits instead
        "../one/scan.jpg",
        "MEMORY.md",
        "attachments/board.PNG",
        "attachments/sub/memo.mp3",
    ]
    assert rel_paths(scan_roots(vault, roots)) == ["MEMORY.md"]  # no rule: notes only
