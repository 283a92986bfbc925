"""Foreign and broken files in a vault: the index completes, reports them, and loses nothing."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from support.unprivileged import call_unprivileged, nobody_home, privileged, shared_folder
from support.vaults import (
    cli_env,
    make_settings,
    run_apus,
    run_json,
    search_paths,
    stored_paths,
    sync,
    vault_digest,
    write_note,
)

MAX_BYTES = 2048  # the size guard for these tests (the smallest the config allows is 1 KB)

GOOD = {
    "alpha.md": "# Alpha\n\nThe albatross glides.\n",
    "notes/beta.md": "# Beta\n\nA bittern booms in the reeds.\n",
    "bad-yaml.md": "---\ntitle: [unclosed\n: : :\n---\n\nThe okapi hides in the forest.\n",
    "crlf.md": "\ufeff# Windows\r\n\r\nThe quokka smiles.\r\n",
    "empty.md": "",
}


def _build_vault(root: Path, outside: Path) -> Path:
    vault = root
    for rel, text in GOOD.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_bytes(text.encode("utf-8"))
    # Named like notes, but not text.
    (vault / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    (vault / "latin1.md").write_bytes("# Latin\n\nCafé au lait and a narwhal.\n".encode("latin-1"))
    (vault / "huge.md").write_text("# Huge\n\n" + "gigantic words " * 400, encoding="utf-8")
    os.mkfifo(vault / "pipe.md")
    # Links that lead nowhere, in circles, or out of the vault.
    (vault / "ghost.md").symlink_to("missing.md")
    (vault / "self.md").symlink_to("self.md")
    (vault / "loop").symlink_to(".")
    (vault / "alias.md").symlink_to("alpha.md")  # inside: the same note, kept once
    write_note(outside, "secret.md", "# Secret\n\nThe wolverine must stay private.\n")
    (vault / "outside.md").symlink_to(outside / "secret.md")
    (vault / "outside-dir").symlink_to(outside)
    # A decomposed (NFD) file name, as macOS writes it.
    write_note(vault, unicodedata.normalize("NFD", "déjà vu.md"), "# Again\n\nThe dodo returns.\n")
    return vault


# The reason names the problem; these are the words it must contain.
EXPECTED_SKIPS = {
    "binary.md": "binary",
    "huge.md": "larger than",
    "pipe.md": "not a regular file",
    "ghost.md": "broken symlink",
    "self.md": "symlink loop",
    "loop": "already scanned",
    "outside.md": "outside",
    "outside-dir": "outside",
}


def test_bad_files_are_reported_and_nothing_is_lost(tmp_path: Path) -> None:
    vault = _build_vault(tmp_path / "vault", tmp_path / "outside")
    before = vault_digest(vault)
    outside_before = vault_digest(tmp_path / "outside")
    env = cli_env(APUS_MEMORY__SEARCH__SYNC__MAXFILEBYTES=str(MAX_BYTES))

    indexed = run_apus("--vault", vault, "memory", "index", env=env)
    assert f"Skipped {len(EXPECTED_SKIPS)} file(s)" in indexed.stdout

    status = run_json("--vault", vault, "memory", "status", "--json", env=env)
    reasons = {item["path"]: item["reason"] for item in status["skipped"]}
    assert set(reasons) == set(EXPECTED_SKIPS)
    for path, words in EXPECTED_SKIPS.items():
        assert words in reasons[path], (path, reasons[path])
    assert status["replaced_utf8"] == ["latin1.md"]
    nfd_name = unicodedata.normalize("NFD", "déjà vu.md")
    assert status["files"] == len(GOOD) + 2  # the good notes, latin1.md and the NFD name

    found = run_json("--vault", vault, "memory", "search", "--json", "narwhal", env=env)
    [hit] = found["results"]
    assert hit["path"] == "latin1.md"
    assert "Caf\ufffd au lait" in hit["snippet"]

    settings = make_settings(vault, memory__search__sync__maxFileBytes=MAX_BYTES)
    for word, path in [
        ("albatross", "alpha.md"),
        ("bittern", "notes/beta.md"),
        ("okapi", "bad-yaml.md"),
        ("quokka", "crlf.md"),
        ("dodo", nfd_name),
        ("wolverine", None),
        ("gigantic", None),
    ]:
        assert search_paths(settings, word) == ([path] if path else []), word
    assert "alias.md" not in stored_paths(settings)

    # Nothing the user owns was touched: not the vault, not what its links point at.
    assert vault_digest(vault) == before
    assert vault_digest(tmp_path / "outside") == outside_before

    # A second run reports the same files once, and a fixed file is picked up.
    (vault / "binary.md").write_text("# Fixed\n\nNow a note about the pangolin.\n", "utf-8")
    again = sync(settings)
    assert {s.rel_path for s in again.skipped} == set(EXPECTED_SKIPS) - {"binary.md"}
    assert search_paths(settings, "pangolin") == ["binary.md"]


def test_a_note_that_turns_bad_leaves_the_index(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "a.md", "# A\n\nThe axolotl swims.\n")
    write_note(vault, "b.md", "# B\n\nThe bonobo climbs.\n")
    settings = make_settings(vault)
    sync(settings)
    assert search_paths(settings, "axolotl") == ["a.md"]

    (vault / "a.md").write_bytes(b"\x00\x01binary now axolotl")
    report = sync(settings)
    assert [(s.rel_path, s.reason) for s in report.skipped] == [("a.md", "binary file")]
    assert search_paths(settings, "axolotl") == []
    assert stored_paths(settings) == {"b.md"}


def _index_and_search(vault: Path) -> tuple[dict[str, str], list[str]]:
    settings = make_settings(vault)
    report = sync(settings)
    return {s.rel_path: s.reason for s in report.skipped}, search_paths(settings, "ibis")


def test_unreadable_file_and_folder_are_counted_not_fatal() -> None:
    # As `nobody` when the tests run as root, who reads files whatever their mode.
    with shared_folder() as folder:
        vault = folder / "vault"
        write_note(vault, "open.md", "# Open\n\nThe ibis wades.\n")
        locked_file = write_note(vault, "locked.md", "# Locked\n\nThe jackdaw hides.\n")
        locked_dir = vault / "private"
        write_note(locked_dir, "inner.md", "# Inner\n\nThe kiwi sleeps.\n")
        locked_file.chmod(0)
        locked_dir.chmod(0)
        try:
            env = nobody_home(folder, {}) if privileged() else None  # its own index folder
            reasons, found = call_unprivileged(lambda: _index_and_search(vault), env)
            assert reasons == {"locked.md": "permission denied", "private": "permission denied"}
            assert found == ["open.md"]
        finally:
            locked_dir.chmod(0o755)
            locked_file.chmod(0o644)


def test_a_file_name_that_is_not_utf8_is_skipped_and_the_rest_indexed(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "ok.md", "# Ok\n\nThe ocelot prowls.\n")
    with open(os.path.join(os.fsencode(vault), b"bad\xff.md"), "wb") as handle:
        handle.write(b"# Bad\n\nThe bongo hides.\n")
    before = vault_digest(vault)

    indexed = run_apus("--vault", vault, "memory", "index")
    assert "bad\\xff.md: file name is not valid UTF-8" in indexed.stdout

    status = run_json("--vault", vault, "memory", "status", "--json")
    assert status["files"] == 1
    assert status["skipped"] == [
        {"path": "bad\\xff.md", "reason": "file name is not valid UTF-8 (rename it to index it)"}
    ]
    assert "bad\\xff.md" in run_apus("--vault", vault, "memory", "status").stdout
    found = run_json("--vault", vault, "memory", "search", "--json", "ocelot")
    assert [hit["path"] for hit in found["results"]] == ["ok.md"]
    assert vault_digest(vault) == before
