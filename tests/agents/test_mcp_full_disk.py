"""A full disk, a real one (a small tmpfs; mounting needs root): a write it cuts short leaves
the note as it was, a missing note is made whole or not at all, and reading needs no space:
search answers from what is indexed and says the keyword index is behind, and why."""

from __future__ import annotations

import shutil
from pathlib import Path

from agents.mcp_client import agent, call, refused, server_env
from support.full_disk import full
from support.vaults import index_vault, run_apus, run_json, write_note

TODAY = "2026-12-02"
DAILY = f"memory/{TODAY}.md"
# Longer than the free end of the note's last page, so the disk takes part of it, not none.
LONG_ENTRY = "Quetzal survey: " + "the tower count went up again " * 300


def writable_env(**extra: str) -> dict[str, str]:
    return server_env(
        APUS_TODAY=TODAY,
        APUS_MEMORY__WRITE__ENABLED="true",
        APUS_MEMORY__WRITE__MAX_ENTRY_CHARS="20000",
        **extra,
    )


async def test_a_write_the_disk_cuts_short_is_taken_back(small_disk: Path) -> None:
    vault = small_disk / "vault"
    write_note(vault, DAILY, f"# {TODAY}\n\nMorning notes.\n")
    write_note(vault, "notes/a.md", "# A\n\nSomething else.\n")
    index_vault(vault, server_env())
    note = (vault / DAILY).read_bytes()
    assert len(note) % 4096 and len(LONG_ENTRY) > 4096  # the disk takes some of it, not all
    async with agent(vault, writable_env()) as session:
        with full(small_disk):
            text = await refused(session, "memory_write", text=LONG_ENTRY)
            assert "disk is full" in text and "Fix:" in text, text
            assert (vault / DAILY).read_bytes() == note  # the torn part taken out again
        found = await call(session, "memory_search", query="quetzal tower")
        assert found["results"] == []  # nothing torn was indexed
        written = await call(session, "memory_write", text=LONG_ENTRY)
        assert written["created"] is False and written["indexed"] is True
        found = await call(session, "memory_search", query="quetzal tower")
        assert [hit["path"] for hit in found["results"]] == [DAILY]
    assert (vault / DAILY).read_bytes().startswith(note)


async def test_a_missing_note_is_made_whole_or_not_at_all(small_disk: Path) -> None:
    vault = small_disk / "vault"
    write_note(vault, "MEMORY.md", "# Memory\n\nThe blog is deployed with make deploy.\n")
    index_vault(vault, server_env())
    async with agent(vault, writable_env()) as session:
        with full(small_disk):
            for target in ("daily", "USER.md"):
                text = await refused(session, "memory_write", text=LONG_ENTRY, target=target)
                assert "disk is full" in text and "Fix:" in text, text
                assert "Error executing tool" not in text
            # No note without its entry, no folder made for it, no hidden file left behind.
            assert sorted(path.name for path in vault.iterdir()) == ["MEMORY.md"]
        daily = await call(session, "memory_write", text="The first entry of the day.")
        user = await call(session, "memory_write", text="Sam prefers tea.", target="USER.md")
    assert daily["created"] is True and user["created"] is True
    assert (vault / DAILY).read_text(encoding="utf-8").startswith(f"# {TODAY}\n\n## ")
    assert (vault / "USER.md").read_text(encoding="utf-8").endswith("Sam prefers tea.\n")
    async with agent(vault, writable_env()) as session:
        again = await call(session, "memory_write", text="Sam likes oolong.", target="USER.md")
    assert again["created"] is False and again["startLine"] > user["endLine"]


def _stale_keyword_index(vault: Path, index: Path, env: dict[str, str]) -> None:
    """An index whose keyword part is a generation behind its store, as a writer leaves it
    that died between the two (a newer note is in the store, not yet in the keyword index)."""
    index_vault(vault, env)
    shutil.copytree(index / "keyword", index.parent / "keyword-before")
    write_note(vault, "notes/new.md", "# New\n\nThe zeppelin hangar opened.\n")
    index_vault(vault, env)
    shutil.rmtree(index / "keyword")
    shutil.move(index.parent / "keyword-before", index / "keyword")


async def test_reading_a_full_disk_answers_from_what_is_indexed(
    tmp_path: Path,
    small_disk: Path,
) -> None:
    vault = tmp_path / "vault"
    for number in range(20):
        write_note(vault, f"notes/n{number:02d}.md", f"# Note {number}\n\nmarker{number} kept.\n")
    index = small_disk / "index"
    env = server_env(APUS_MEMORY__SEARCH__STORE__PATH=str(index))
    _stale_keyword_index(vault, index, env)
    with full(small_disk):
        # The CLI: the keyword index cannot be repaired, so it answers as it is, and says so.
        found = run_apus("--vault", vault, "memory", "search", "marker7", env=env)
        assert "could not be brought up to date" in found.stderr and "full" in found.stderr
        assert "notes/n07.md" in found.stdout
        hits = run_json("--vault", vault, "memory", "search", "marker7", "--json", env=env)
        assert [hit["path"] for hit in hits["results"]] == ["notes/n07.md"]
        assert "full" in hits["legs"]["keyword"]["reason"] and hits["legs"]["keyword"]["fix"]
        # Nothing that only reads needs a byte of space.
        status = run_json("--vault", vault, "memory", "status", "--json", env=env)
        assert status["files"] == 21
        page = run_json("--vault", vault, "memory", "get", "notes/new.md", "--json", env=env)
        assert "zeppelin" in page["text"]
        run_apus("--vault", vault, "memory", "recall", "marker", env=env)
        doctor = run_apus("--vault", vault, "doctor", "--json", env=env, expect=None)
        assert doctor.returncode in (0, 1) and "Traceback" not in doctor.stderr
        # The agent server: its own sync fails for the full disk; every search still answers,
        # and once that failure stands, says why the keyword index is behind.
        async with agent(vault, env) as session:
            while (await call(session, "memory_status"))["lastSync"]["ok"]:
                pass  # until this server's first sync has failed on the full disk
            answer = await call(session, "memory_search", query="marker7")
            assert [hit["path"] for hit in answer["results"]] == ["notes/n07.md"]
            assert any("could not be brought up to date" in n for n in answer["notices"])
            window = await call(session, "memory_get", path="notes/new.md")
            assert "zeppelin" in window["text"]
    # With room again, the next sync brings it up to date.
    index_vault(vault, env)
    hits = run_json("--vault", vault, "memory", "search", "zeppelin", "--json", env=env)
    assert [hit["path"] for hit in hits["results"]] == ["notes/new.md"]


async def test_an_entry_written_while_the_index_disk_is_full_says_it_is_not_searchable_yet(
    tmp_path: Path,
    small_disk: Path,
) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "MEMORY.md", "# Memory\n\nThe blog is deployed with make deploy.\n")
    env = writable_env(APUS_MEMORY__SEARCH__STORE__PATH=str(small_disk / "index"))
    index_vault(vault, env)
    async with agent(vault, env) as session:
        with full(small_disk):
            result = await session.call_tool("memory_write", {"text": "Ocelot sighting at dawn."})
            text = result.content[0].text  # type: ignore[union-attr]
            assert not result.is_error, text  # the vault's disk has room: it is written
            assert result.structured_content is not None
            assert result.structured_content["indexed"] is False
            assert "not searchable yet" in text and "full" in text and "Fix:" in text, text
            assert "Ocelot sighting at dawn." in (vault / DAILY).read_text(encoding="utf-8")
        await call(session, "memory_write", text="Second entry once there is room.")
        found = await call(session, "memory_search", query="ocelot")
        assert [hit["path"] for hit in found["results"]] == [DAILY]
