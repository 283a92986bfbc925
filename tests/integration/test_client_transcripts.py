"""Claude Code's and Codex's transcripts through the real sync, searches and status, from the
folders those clients keep them in: exact words, history, appends, half-written and broken
lines, the client and tool-call settings, and visibility."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apus.config import Settings
from apus.index.note_filter import CORPUS_SOURCES, Asker, NoteFilter
from apus.index.store import Store
from apus.memory import Memory
from apus.search.engine import SearchOptions
from apus.vault import transcripts as tx
from support.client_transcripts import (
    CODEX_FILE,
    CODEX_KEY,
    CODEX_SUBAGENT_KEY,
    FIXTURE_KEYS,
    KILN_AGENT,
    KILN_FILE,
    KILN_KEY,
    KILN_SUBAGENT_KEY,
    claude_line,
    codex_line,
    install,
    installed,
    sessions_env,
)
from support.transcripts import append
from support.vaults import cli_env, make_settings, run_apus, sync, write_note

# The kiln session's last line with a uuid: an append continues from it.
KILN_TIP = "f939ffcd-fd56-4300-abc9-513aa60d0ff9"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "notes/kiln.md", "# Kiln\n\nThe kiln fires at cone six on Sundays.\n")
    return root


@pytest.fixture
def settings(vault: Path) -> Settings:
    install()
    return make_settings(vault, sessions_env())


def exact(settings: Settings, query: str, asker: Asker | None = None) -> list[tuple[str, str]]:
    with Memory(settings=settings) as memory:
        return [(m.session_key, m.role) for m in memory.sessions_search(query, asker=asker)]


def meaning(settings: Settings, query: str) -> list[str]:
    options = SearchOptions(filters=NoteFilter(sources=CORPUS_SOURCES["sessions"]), limit=20)
    with Memory(settings=settings) as memory:
        return [hit.path for hit in memory.search(query, options).hits]


def indexed_keys(settings: Settings) -> set[str]:
    store = Store(settings.index_dir(), readonly=True)
    try:
        rows = store.connection.execute("SELECT session_key FROM transcripts")
        return {str(row[0]) for row in rows}
    finally:
        store.close()


def test_both_clients_sessions_are_indexed_from_their_own_folders(settings: Settings) -> None:
    report = sync(settings)
    assert report.sessions.added == len(FIXTURE_KEYS)
    assert report.sessions.skipped_lines == 1  # the Codex sample's unknown record
    assert indexed_keys(settings) == FIXTURE_KEYS
    with Memory(settings=settings) as memory:
        status = memory.status().sessions
    by_client = {s.client: (s.sessions, s.present) for s in status.sources}
    assert by_client == {"claude-code": (8, True), "codex": (4, True)}
    # The watcher is handed the same folders the sync reads.
    roots = tx.roots(settings)
    assert installed("claude/projects") in roots and installed("codex/sessions") in roots


def test_exact_words_find_an_answer_and_a_request_in_either_client(settings: Settings) -> None:
    sync(settings)
    # The same answer was given in a Claude Code and a Codex session.
    assert set(exact(settings, "celadon feldspar")) == {
        (CODEX_KEY, "assistant"),
        (KILN_KEY, "assistant"),
    }
    assert exact(settings, '"raku firing get"') == [(KILN_KEY, "user")]
    assert exact(settings, '"glaze bucket kept"') == [(CODEX_KEY, "user")]
    assert set(exact(settings, '"wedging table" subagent')) == {
        (CODEX_SUBAGENT_KEY, "assistant"),
        (KILN_SUBAGENT_KEY, "assistant"),
    }
    # Thinking, tool input, reasoning and what the clients add themselves are not there.
    for absent in ("recall", "echo", "environment_context", "caveat", "handoff"):
        assert exact(settings, absent) == [], absent
    # Memory search over transcripts finds them too, by their store paths.
    assert f"sessions:{KILN_KEY}" in meaning(settings, "raku firing temperature")
    assert meaning(settings, "raku firing temperature")[0] == f"sessions:{KILN_KEY}"


def test_history_pages_around_a_message(settings: Settings) -> None:
    sync(settings)
    with Memory(settings=settings) as memory:
        hit = memory.sessions_search('"raku firing get"')[0]
        window = memory.sessions_history(KILN_KEY, line=hit.line, limit=3)
        by_time = memory.sessions_history(KILN_KEY, around=hit.timestamp, limit=3)
        latest = memory.sessions_history(CODEX_KEY, limit=2)
    texts = [m.text for m in window.messages]
    assert texts == [
        "Celadon: 40 feldspar, 30 silica, 20 whiting, 10 kaolin.",
        "Part one: the kiln is loaded.\n\nPart two: how hot does a raku firing get?",
        "Raku firing reaches about 1000 degrees Celsius in forty minutes; pull the pots with "
        "tongs.",
    ]
    assert window.more_before and window.more_after
    assert [m.text for m in by_time.messages] == texts
    assert window.info.agent == KILN_AGENT
    assert window.info.started == "2026-12-06T20:19:48.126Z"
    assert window.info.last_activity == "2026-12-06T20:19:57.909Z"
    assert [m.role for m in latest.messages] == ["user", "assistant"]
    assert latest.messages[0].text == "Where is the glaze bucket kept?"
    assert not latest.more_after and latest.info.messages == 8


def test_an_appended_line_is_found_after_the_next_sync(settings: Settings) -> None:
    sync(settings)
    append(
        installed(KILN_FILE),
        claude_line(
            "n1", KILN_TIP, "user", "Where do the kiln shelves go?", "2026-12-07T09:00:00Z"
        ),
    )
    append(
        installed(CODEX_FILE),
        codex_line("assistant", "Stack the saggars low.", "2026-12-07T09:01:00Z"),
    )
    assert exact(settings, "shelves") == []
    report = sync(settings)
    assert (report.sessions.appended, report.sessions.reread, report.sessions.messages) == (2, 0, 2)
    assert exact(settings, "shelves") == [(KILN_KEY, "user")]
    assert exact(settings, "saggars") == [(CODEX_KEY, "assistant")]
    with Memory(settings=settings) as memory:
        assert memory.sessions_history(KILN_KEY, limit=1).messages[0].timestamp == (
            "2026-12-07T09:00:00.000Z"
        )
    assert f"sessions:{KILN_KEY}" in meaning(settings, "kiln shelves")


def test_a_truncated_last_line_is_skipped_until_it_is_complete(settings: Settings) -> None:
    sync(settings)
    whole = claude_line("n1", KILN_TIP, "user", "What about the bisque?", "2026-12-07T09:00:00Z")
    append(installed(KILN_FILE), whole[:60])
    half = sync(settings)
    assert (half.sessions.messages, half.sessions.skipped_lines) == (0, 0)
    assert exact(settings, "bisque") == []
    append(installed(KILN_FILE), whole[60:])
    done = sync(settings)
    assert (done.sessions.appended, done.sessions.messages) == (1, 1)
    assert exact(settings, "bisque") == [(KILN_KEY, "user")]


def test_a_malformed_line_is_counted_and_never_stops_the_rest(settings: Settings) -> None:
    sync(settings)
    append(installed(CODEX_FILE), "{synthetic malformed json\n")
    append(installed(CODEX_FILE), codex_line("user", "Is the damper open?", "2026-12-07T09:00:00Z"))
    report = sync(settings)
    assert (report.sessions.messages, report.sessions.skipped_lines) == (1, 1)
    assert exact(settings, "damper") == [(CODEX_KEY, "user")]
    with Memory(settings=settings) as memory:
        skipped = memory.status().as_dict()["sessions"]["skipped_by_file"]
    assert {"session_key": CODEX_KEY, "path": str(installed(CODEX_FILE)), "malformed": 1,
            "unknown": 0, "oversized": 0} in skipped  # fmt: skip


def test_the_clients_setting_picks_the_folders(vault: Path) -> None:
    install()
    codex_only = make_settings(
        vault, sessions_env(APUS_MEMORY__SEARCH__SESSIONS__CLIENTS='["codex"]')
    )
    sync(codex_only)
    assert {key.split("/")[0] for key in indexed_keys(codex_only)} == {"codex"}
    with Memory(settings=codex_only) as memory:
        sources = memory.status().sessions.sources
    assert [s.client for s in sources] == ["codex"]
    none = make_settings(vault, sessions_env(APUS_MEMORY__SEARCH__SESSIONS__CLIENTS="[]"))
    assert sync(none).sessions.removed == 4
    assert indexed_keys(none) == set()
    assert tx.roots(none) == []


def test_tool_calls_are_indexed_only_when_asked(settings: Settings, vault: Path) -> None:
    sync(settings)
    assert exact(settings, '"echo cone six"') == []
    with_tools = make_settings(vault, sessions_env(APUS_MEMORY__SEARCH__SESSIONS__TOOLCALLS="true"))
    report = sync(with_tools)
    assert report.sessions.reread == len(FIXTURE_KEYS)  # made with other settings: read again
    assert set(exact(with_tools, '"echo cone six"')) == {(CODEX_KEY, "tool"), (KILN_KEY, "tool")}
    assert exact(with_tools, "recall") == []  # thinking never is


@pytest.mark.parametrize(
    ("visibility", "asker", "visible"),
    [
        ("agent", Asker(agent=KILN_AGENT), {KILN_KEY, KILN_SUBAGENT_KEY}),
        ("tree", Asker(session=KILN_KEY), {KILN_KEY, KILN_SUBAGENT_KEY}),
        ("tree", Asker(session=CODEX_KEY), {CODEX_KEY, CODEX_SUBAGENT_KEY}),
        ("self", Asker(session=CODEX_SUBAGENT_KEY), {CODEX_SUBAGENT_KEY}),
        ("agent", Asker(agent="codex"), {CODEX_KEY, CODEX_SUBAGENT_KEY}),
    ],
)
def test_visibility_applies_to_the_clients_sessions(
    vault: Path, visibility: str, asker: Asker, visible: set[str]
) -> None:
    install()
    settings = make_settings(vault, sessions_env(APUS_TOOLS__SESSIONS__VISIBILITY=visibility))
    sync(settings)
    # "wedging table" is in the four sessions of the two clients' kiln conversations.
    assert {key for key, _role in exact(settings, '"wedging table"', asker)} == visible


def test_status_says_where_sessions_come_from(settings: Settings, vault: Path) -> None:
    sync(settings)
    env = sessions_env(COLUMNS="400")  # one source a line, however long its folders
    printed = run_apus("--vault", vault, "memory", "status", env=cli_env(**env)).stdout
    assert "claude-code: 8 sessions from " + str(installed("claude/projects")) in printed
    assert "codex: 4 sessions from " + str(installed("codex/sessions")) in printed
    data = json.loads(
        run_apus("--vault", vault, "memory", "status", "--json", env=cli_env(**env)).stdout
    )
    sources = {s["client"]: s for s in data["sessions"]["sources"]}
    assert sources["codex"]["roots"] == [
        str(installed("codex/sessions")),
        str(installed("codex/archived_sessions")),
    ]
    assert (sources["codex"]["sessions"], sources["codex"]["present"]) == (4, True)
