"""Transcripts through the real sync and search: what is found, appends, half-written and
skipped lines, the opt-in, and what a default search never sees."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from apus.config import Settings
from apus.index.keyword import KeywordIndex
from apus.index.note_filter import CORPUS_SOURCES, NoteFilter
from apus.index.store import Store
from apus.index.transcript_store import TranscriptStore
from apus.memory import Memory
from apus.search.engine import SearchHit, SearchOptions
from support.tiny_gguf import write_tiny_gguf
from support.transcripts import (
    append,
    conversation,
    enabled_env,
    lines,
    message,
    tool_result,
    transcript_path,
    write_transcript,
)
from support.vaults import local_model_settings, make_settings, sync, write_note


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "notes/router.md", "# Router\n\nThe router lives in the hallway closet.\n")
    write_note(root, "notes/kiln.md", "# Kiln\n\nThe kiln fires at cone six on Sundays.\n")
    return root


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    root = tmp_path / "agents"
    write_transcript(
        root,
        "main/s1",
        conversation(
            "main/s1",
            [
                ("Where does the kiln schedule live?", "In the studio calendar, Sundays."),
                ("And the glaze recipe?", "Celadon: 40 feldspar, 30 silica, 20 whiting."),
            ],
        ),
    )
    return root


def settings_for(vault: Path, agents: Path, **env: str) -> Settings:
    return make_settings(vault, enabled_env(agents, **env))


def found(settings: Settings, query: str, corpus: str = "sessions") -> list[SearchHit]:
    options = SearchOptions(filters=NoteFilter(sources=CORPUS_SOURCES[corpus]), limit=20)
    with Memory(settings=settings) as memory:
        return memory.search(query, options).hits


def exact(settings: Settings, query: str) -> list[tuple[str, str]]:
    with Memory(settings=settings) as memory:
        return [(m.session_key, m.role) for m in memory.sessions_search(query)]


def transcript_rows(settings: Settings) -> tuple[int, int, int]:
    """(transcript files, their chunks, FTS rows) in the store."""
    store = Store(settings.index_dir(), readonly=True)
    try:
        summary = TranscriptStore(store).summary()
        fts = store.connection.execute("SELECT COUNT(*) FROM transcript_text").fetchone()[0]
        return summary.files, summary.chunks, int(fts)
    finally:
        store.close()


def test_a_transcript_is_found_by_words_and_carries_its_source(vault: Path, agents: Path) -> None:
    settings = settings_for(vault, agents)
    report = sync(settings)
    assert (report.sessions.added, report.sessions.messages) == (1, 4)
    hits = found(settings, "glaze celadon")
    assert [h.path for h in hits] == ["sessions:main/s1"]
    assert hits[0].source == "sessions" and hits[0].start_line >= 2
    assert hits[0].note_date == "2026-11-20"  # the last activity: what recency decays by
    both = found(settings, "kiln", corpus="all")
    assert {h.source for h in both} == {"memory", "sessions"}
    assert exact(settings, "celadon feldspar") == [("main/s1", "assistant")]
    assert exact(settings, '"glaze recipe"') == [("main/s1", "user")]
    assert exact(settings, '"recipe glaze"') == []  # a phrase is exact


def test_the_default_corpus_never_returns_transcripts(vault: Path, agents: Path) -> None:
    settings = settings_for(vault, agents)
    sync(settings)
    # "kiln" is in a note and a transcript; "celadon" only in the transcript.
    assert [h.path for h in found(settings, "kiln", corpus="memory")] == ["notes/kiln.md"]
    with Memory(settings=settings) as memory:
        default = memory.search("celadon")  # no options: the plain default
        assert default.hits == []
        assert [h.path for h in memory.search("kiln").hits] == ["notes/kiln.md"]
        related = memory.related("notes/kiln.md")
        assert all(h.source == "memory" for h in related.hits)
        assert memory.recall("where does the kiln schedule live") == []
        assert memory.status().files == 2  # notes; the transcript is counted apart
        assert memory.status().sessions.summary.files == 1


def test_thinking_tool_calls_and_tool_results_are_never_found(vault: Path, tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    t = "2026-11-20T10:00:{:02d}Z"
    write_transcript(
        agents,
        "main/s1",
        [
            {"type": "session", "id": "s1", "timestamp": t.format(0)},
            message("a", None, "user", "Check the disk", t.format(1)),
            message(
                "b", "a", "assistant", "Checking.", t.format(2),
                thinking="zanzibar pondering", tool_call="df --quokka",
            ),
            tool_result("c", "b", "filesystem wombat 93%", t.format(3)),
            message("d", "c", "assistant", "The disk is nearly full.", t.format(4)),
        ],
    )  # fmt: skip
    settings = settings_for(vault, agents)
    sync(settings)
    assert [h.path for h in found(settings, "disk")] == ["sessions:main/s1"]
    for secret in ("zanzibar", "quokka", "wombat", "pondering", "filesystem"):
        assert found(settings, secret, corpus="all") == [], secret
        assert exact(settings, secret) == [], secret


def test_a_truncated_last_line_is_picked_up_once_completed(vault: Path, agents: Path) -> None:
    settings = settings_for(vault, agents)
    sync(settings)
    path = transcript_path(agents, "main/s1")
    whole = json.dumps(
        message("m4", "m3", "user", "What about the raku firing?", "2026-11-21T08:00:00Z")
    )
    append(path, whole[:40])
    half = sync(settings)
    assert half.sessions.messages == 0 and half.sessions.skipped_lines == 0
    assert exact(settings, "raku") == []
    append(path, whole[40:] + "\n")
    done = sync(settings)
    assert (done.sessions.appended, done.sessions.messages) == (1, 1)
    assert exact(settings, "raku") == [("main/s1", "user")]
    assert [h.path for h in found(settings, "raku")] == ["sessions:main/s1"]
    assert found(settings, "raku")[0].note_date == "2026-11-21"


def test_an_append_adds_only_the_tail(vault: Path, agents: Path) -> None:
    settings = settings_for(vault, agents, APUS_MEMORY__SEARCH__CHUNKING__TOKENS="40")
    sync(settings)
    store = Store(settings.index_dir(), readonly=True)
    record = store.file_by_path("sessions:main/s1")
    assert record is not None
    before = {c.id: c.text for c in store.iter_chunks([record.id])}
    store.close()
    assert len(before) >= 2
    path = transcript_path(agents, "main/s1")
    append(path, lines(conversation("main/s1", [("Bisque temperature?", "Cone 04.")], first=4)))
    report = sync(settings)
    assert (report.sessions.appended, report.sessions.reread) == (1, 0)
    store = Store(settings.index_dir(), readonly=True)
    after = {c.id: c.text for c in store.iter_chunks([record.id])}
    store.close()
    kept = set(before) & set(after)
    # Every chunk but the last one stays as it was, with its id (and so its vector).
    assert kept == set(sorted(before)[:-1])
    assert all(after[i] == before[i] for i in kept)
    assert "Bisque" in "".join(after[i] for i in set(after) - kept)
    assert exact(settings, "bisque") == [("main/s1", "user")]
    # Whoosh was updated in place, not rebuilt, and agrees with the store.
    assert not report.keyword_rebuilt
    keyword = KeywordIndex(settings.index_dir())
    try:
        assert keyword.state().generation == Store(settings.index_dir(), readonly=True).generation()
    finally:
        keyword.close()
    assert [h.path for h in found(settings, "bisque")] == ["sessions:main/s1"]
    assert transcript_rows(settings)[2] == 6  # the FTS rows: one per message


def test_going_back_in_the_conversation_reads_the_file_again(vault: Path, agents: Path) -> None:
    settings = settings_for(vault, agents)
    sync(settings)
    path = transcript_path(agents, "main/s1")
    # The user edits the second question: a new branch from the first answer.
    append(
        path, lines([message("x1", "m1", "user", "And the slip recipe?", "2026-11-22T08:00:00Z")])
    )
    report = sync(settings)
    assert (report.sessions.appended, report.sessions.reread) == (0, 1)
    assert exact(settings, "slip") == [("main/s1", "user")]
    assert exact(settings, "celadon") == []  # the abandoned branch is no longer indexed
    assert found(settings, "celadon") == []


def test_a_rewritten_file_is_read_again(vault: Path, agents: Path) -> None:
    settings = settings_for(vault, agents)
    sync(settings)
    write_transcript(agents, "main/s1", conversation("main/s1", [("Porcelain?", "Translucent.")]))
    report = sync(settings)
    assert report.sessions.reread == 1
    assert exact(settings, "porcelain") == [("main/s1", "user")]
    assert exact(settings, "celadon") == []
    assert transcript_rows(settings) == (1, 1, 2)


def test_skipped_lines_are_counted_per_file_in_status(vault: Path, agents: Path) -> None:
    settings = settings_for(vault, agents, APUS_MEMORY__SEARCH__SESSIONS__MAXLINEBYTES="2048")
    path = transcript_path(agents, "main/s1")
    append(path, "{broken json\n")
    append(path, json.dumps({"type": "telemetry", "id": "t1"}) + "\n")
    append(path, json.dumps(message("big", "m3", "user", "x" * 5000, "2026-11-20T11:00:00Z")))
    append(path, "\n")
    write_transcript(agents, "helper/clean", conversation("helper/clean", [("hi", "hello")]))
    sync(settings)
    # Counted once, not again by a later sync that reads only new lines.
    append(path, "also broken\n")
    sync(settings)
    with Memory(settings=settings) as memory:
        sessions = memory.status().as_dict()["sessions"]
    assert (sessions["files"], sessions["messages"], sessions["skipped"]) == (2, 6, 4)
    assert sessions["skipped_by_file"] == [
        {
            "session_key": "main/s1",
            "path": str(path),
            "malformed": 2,
            "unknown": 1,
            "oversized": 1,
        }
    ]


def test_opting_out_indexes_nothing_and_removes_what_was_indexed(vault: Path, agents: Path) -> None:
    off = make_settings(vault, {"APUS_MEMORY__SEARCH__SESSIONS__PATHS": json.dumps([str(agents)])})
    report = sync(off)
    assert (report.sessions.enabled, report.sessions.added) == (False, 0)
    assert transcript_rows(off) == (0, 0, 0)
    on = settings_for(vault, agents)
    sync(on)
    assert transcript_rows(on) == (1, 1, 4)
    # Only the switch in sources left: nothing is returned even before the next sync...
    half_off = settings_for(vault, agents, APUS_MEMORY__SEARCH__SOURCES='["memory"]')
    assert found(half_off, "celadon", corpus="all") == []
    with Memory(settings=half_off) as memory, pytest.raises(Exception, match="not indexed"):
        memory.sessions_search("celadon")
    # ...and the next sync removes it all: chunks, messages, the keyword index's documents.
    removed = sync(half_off)
    assert removed.sessions.removed == 1
    assert transcript_rows(half_off) == (0, 0, 0)
    assert found(on, "celadon") == []  # on again but not synced: nothing is left to find


def test_a_vanished_transcript_is_removed(vault: Path, agents: Path) -> None:
    settings = settings_for(vault, agents)
    sync(settings)
    os.remove(transcript_path(agents, "main/s1"))
    assert sync(settings).sessions.removed == 1
    assert transcript_rows(settings) == (0, 0, 0)


def _transcript_chunks(settings: Settings) -> dict[int, str]:
    store = Store(settings.index_dir(), readonly=True)
    try:
        record = store.file_by_path("sessions:main/s1")
        assert record is not None
        return {c.id: c.text for c in store.iter_chunks([record.id])}
    finally:
        store.close()


def test_an_append_embeds_only_the_tail(
    vault: Path, agents: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = write_tiny_gguf(tmp_path / "tiny-embeddinggemma.gguf", name="tiny-embeddinggemma")
    for key, value in enabled_env(agents, APUS_MEMORY__SEARCH__CHUNKING__TOKENS="40").items():
        monkeypatch.setenv(key, value)
    settings = local_model_settings(vault, model, monkeypatch)
    first = sync(settings)
    assert first.embedding.state == "done"
    assert first.embedded == first.chunks  # every note and transcript chunk
    before = _transcript_chunks(settings)
    assert len(before) >= 2
    path = transcript_path(agents, "main/s1")
    append(path, lines(conversation("main/s1", [("Bisque temperature?", "Cone 04.")], first=4)))
    second = sync(settings)
    after = _transcript_chunks(settings)
    fresh = [text for chunk_id, text in after.items() if chunk_id not in before]
    # Only the last chunk was made again; the new chunks are the tail, and only the texts
    # never embedded before go to the model (a re-made chunk with the same text is cached).
    assert set(before) - set(after) == {max(before)}
    assert second.embedded == len([text for text in fresh if text not in before.values()])
    assert 1 <= second.embedded < len(after)
    assert sync(settings).embedded == 0


def test_an_append_after_a_split_message_keeps_every_word_once(vault: Path, agents: Path) -> None:
    settings = settings_for(vault, agents, APUS_MEMORY__SEARCH__CHUNKING__TOKENS="40")
    path = transcript_path(agents, "main/s1")
    long_answer = " ".join(f"step{i}" for i in range(120))
    append(path, lines([message("m4", "m3", "user", "List the steps", "2026-11-21T08:00:00Z")]))
    append(path, lines([message("m5", "m4", "assistant", long_answer, "2026-11-21T08:01:00Z")]))
    sync(settings)
    before = _transcript_chunks(settings)
    append(path, lines(conversation("main/s1", [("Thanks!", "Welcome.")], first=6)))
    report = sync(settings)
    assert (report.sessions.appended, report.sessions.messages) == (1, 2)
    after = _transcript_chunks(settings)
    words = " ".join(after[i] for i in sorted(after)).split()
    assert [w for w in words if w.startswith("step") and w[4:].isdigit()] == long_answer.split()
    # The split message's pieces are made again (same text), the chunks before them stay.
    assert set(before) - set(after) and min(set(before) - set(after)) > min(before)
    assert sorted(before.values()) == sorted(t for t in after.values() if t in before.values())
