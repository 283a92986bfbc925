"""tools.sessions.visibility at every level, for search by meaning and words (memory_search's
path), exact search and history: what the asker may not see is never returned or counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from apus.index.note_filter import Asker, NoteFilter, SessionScope, VisibilityError
from apus.memory import Memory
from apus.memory.transcript_reader import SessionNotFoundError
from apus.search.engine import SearchOptions
from support.transcripts import conversation, enabled_env, transcript_path, write_transcript
from support.vaults import make_settings, sync, write_note

# Who spawned whom: root <- child <- grand, and helper/h1 spawned by root (another agent).
SESSIONS = {
    "main/root": None,
    "main/child": "root",  # a bare id: the same agent
    "main/grand": "main/child",  # a session key
    "main/other": None,
    "helper/h1": "FILE:main/root",  # the parent's transcript file
}
EVERYONE = set(SESSIONS)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("visibility")
    vault, agents = base / "vault", base / "agents"
    write_note(vault, "notes/meridian.md", "# Meridian\n\nA note that says meridian once.\n")
    for key, parent in SESSIONS.items():
        if parent is not None and parent.startswith("FILE:"):
            parent = str(transcript_path(agents, parent[5:]))
        # Everyone else's transcripts say "meridian" more often (they would rank first).
        loud = "meridian " * (1 if key == "main/child" else 4)
        events = conversation(key, [(f"About {loud}", f"Yes, {loud} noted.")], parent=parent)
        write_transcript(agents, key, events)
    return vault, agents


def memory_for(world: tuple[Path, Path], visibility: str) -> Memory:
    vault, agents = world
    env = enabled_env(agents, APUS_TOOLS__SESSIONS__VISIBILITY=visibility)
    settings = make_settings(vault, env)
    sync(settings)
    return Memory(settings=settings)


def seen_by_search(memory: Memory, asker: Asker, limit: int = 50) -> list[str]:
    filters = NoteFilter(sources=("sessions",), scope=SessionScope(asker=asker))
    hits = memory.search("meridian", SearchOptions(filters=filters, limit=limit)).hits
    return [hit.path.removeprefix("sessions:") for hit in hits]


def seen_by_words(memory: Memory, asker: Asker, limit: int = 50) -> list[str]:
    return [m.session_key for m in memory.sessions_search("meridian", asker=asker, limit=limit)]


def readable(memory: Memory, asker: Asker) -> set[str]:
    keys = set()
    for key in SESSIONS:
        try:
            memory.sessions_history(key, asker=asker)
        except SessionNotFoundError:
            continue
        keys.add(key)
    return keys


CASES = [
    ("self", Asker(session="main/child"), {"main/child"}),
    ("tree", Asker(session="main/root"), {"main/root", "main/child", "main/grand", "helper/h1"}),
    ("tree", Asker(session="main/child"), {"main/child", "main/grand"}),
    ("agent", Asker(agent="main"), {"main/root", "main/child", "main/grand", "main/other"}),
    ("agent", Asker(session="helper/h1"), {"helper/h1"}),
    ("all", Asker(), EVERYONE),
    ("all", Asker(session="main/child"), EVERYONE),
]


@pytest.mark.parametrize(("visibility", "asker", "visible"), CASES)
def test_each_level_sees_exactly_its_transcripts(
    world: tuple[Path, Path], visibility: str, asker: Asker, visible: set[str]
) -> None:
    with memory_for(world, visibility) as memory:
        assert set(seen_by_search(memory, asker)) == visible
        words = seen_by_words(memory, asker)
        assert set(words) == visible and len(words) == 2 * len(visible)  # user + assistant
        assert readable(memory, asker) == visible
        # Notes are not transcripts: visibility never hides them.
        filters = NoteFilter(sources=("memory", "sessions"), scope=SessionScope(asker=asker))
        both = memory.search("meridian", SearchOptions(filters=filters, limit=50)).hits
        assert "notes/meridian.md" in [hit.path for hit in both]


def test_hidden_transcripts_are_not_counted_against_the_limit(world: tuple[Path, Path]) -> None:
    with memory_for(world, "self") as memory:
        asker = Asker(session="main/child")
        # Every other transcript matches more strongly, and none of them takes a slot.
        assert seen_by_search(memory, asker, limit=1) == ["main/child"]
        assert seen_by_words(memory, asker, limit=1) == ["main/child"]


@pytest.mark.parametrize(
    ("visibility", "asker", "says"),
    [
        ("self", Asker(), "--session"),
        ("tree", Asker(agent="main"), "--session"),
        ("agent", Asker(), "--agent"),
        ("agent", Asker(agent="helper", session="main/child"), "belongs to agent main"),
        ("all", Asker(session="child-without-agent"), "AGENT/SESSION"),
    ],
)
def test_a_level_that_needs_an_asker_says_so(
    world: tuple[Path, Path], visibility: str, asker: Asker, says: str
) -> None:
    with memory_for(world, visibility) as memory:
        for call in (
            lambda: seen_by_search(memory, asker),
            lambda: seen_by_words(memory, asker),
            lambda: memory.sessions_history("main/child", asker=asker),
        ):
            with pytest.raises(VisibilityError, match=says) as caught:
                call()
            assert caught.value.fix


def test_a_notes_only_search_needs_no_asker(world: tuple[Path, Path]) -> None:
    with memory_for(world, "self") as memory:
        hits = memory.search("meridian").hits
        assert [hit.path for hit in hits] == ["notes/meridian.md"]


def test_the_caller_cannot_widen_the_configured_level(world: tuple[Path, Path]) -> None:
    with memory_for(world, "self") as memory:
        wide = SessionScope(visibility="all", asker=Asker(session="main/child"))
        filters = NoteFilter(sources=("sessions",), scope=wide)
        hits = memory.search("meridian", SearchOptions(filters=filters, limit=50)).hits
        assert {hit.path for hit in hits} == {"sessions:main/child"}
