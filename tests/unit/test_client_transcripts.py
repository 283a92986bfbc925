"""Reading Claude Code's and Codex's transcripts: the recorded and public sample fixtures,
what is conversation and what is not, branches, compactions, subagents, rollbacks, and where
the files are found."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from apus.vault import transcripts as tx
from apus.vault.claude_code_transcripts import ClaudeCodeLines
from apus.vault.codex_transcripts import CodexLines
from apus.vault.transcript_sources import (
    TranscriptSource,
    client_of_agent,
    find_transcripts,
    reader_for,
)
from apus.vault.transcripts import ReadPosition
from support.client_transcripts import (
    CODEX_FILE,
    CODEX_KEY,
    CODEX_SUBAGENT_KEY,
    FIXTURE_KEYS,
    FIXTURES,
    KILN_AGENT,
    KILN_FILE,
    KILN_KEY,
    KILN_SESSION,
    KILN_SUBAGENT_KEY,
    claude_line,
    codex_event,
    codex_line,
)

LIMIT = 1 << 20
CLAUDE = FIXTURES / "claude" / "projects"
CODEX = FIXTURES / "codex"


def claude(path: Path, *, subagent: bool = False, tools: bool = False) -> tx.Reading:
    lines = ClaudeCodeLines(KILN_AGENT, subagent=subagent, tool_calls=tools)
    return tx.read_transcript(path, lines, ReadPosition(), LIMIT)


def codex(path: Path, *, tools: bool = False, start: ReadPosition | None = None) -> tx.Reading:
    return tx.read_transcript(path, CodexLines(tool_calls=tools), start or ReadPosition(), LIMIT)


def said(reading: tx.Reading) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in tx.active_branch(reading)]


def test_a_recorded_claude_code_session_is_its_prompts_and_answers() -> None:
    reading = claude(FIXTURES / KILN_FILE)
    assert said(reading) == [
        ("user", "RUN: show the kiln schedule"),
        ("assistant", "Let me look."),
        ("assistant", "The command printed the kiln schedule: cone six on Sundays."),
        ("user", "What is the celadon glaze recipe?"),
        ("assistant", "Celadon: 40 feldspar, 30 silica, 20 whiting, 10 kaolin."),
        # One message in two text parts.
        ("user", "Part one: the kiln is loaded.\n\nPart two: how hot does a raku firing get?"),
        (
            "assistant",
            "Raku firing reaches about 1000 degrees Celsius in forty minutes; pull the pots "
            "with tongs.",
        ),
        ("user", "SPAWN a helper to find the glaze bucket"),
        ("assistant", "I will ask a helper."),
        ("assistant", "The helper reports that the glaze bucket sits under the wedging table."),
        # /compact: the command is kept, its caveat, summary and output are not; what was said
        # before the compaction stays on the branch.
        ("user", "/compact"),
        ("assistant", "No response requested."),
        ("user", "After compaction: where was the glaze bucket?"),
        ("assistant", "Under the wedging table, where the helper found it."),
    ]
    everything = json.dumps([m.text for m in reading.messages.values()])
    for absent in ("a command will show it", "Recall the recipe", "echo cone six", "Caveat"):
        assert absent not in everything  # thinking, tool input, Claude Code's own lines
    assert "being continued from a previous conversation" not in everything
    assert reading.skipped.total == 0
    assert reading.header is not None and reading.header.session_id == KILN_SESSION
    assert reading.header.timestamp == "2026-12-06T20:19:48.126Z"  # its first line
    assert reading.header.parent_key is None
    assert reading.last_timestamp == "2026-12-06T20:19:57.909Z"


def test_tool_calls_and_results_come_in_only_when_asked() -> None:
    reading = claude(FIXTURES / KILN_FILE, tools=True)
    branch = said(reading)
    assert (
        "tool",
        'Bash {"command": "echo cone six on Sundays", "description": "Print the schedule"}',
    ) in branch
    assert ("tool", "cone six on Sundays") in branch  # the result
    assert not any("Recall the recipe" in text for _role, text in branch)  # never thinking
    assert len(branch) == 18


def test_a_subagent_is_a_session_of_its_own_whose_parent_spawned_it() -> None:
    path = FIXTURES / "claude/projects/-home-ada-kiln" / KILN_SESSION / "subagents"
    reading = claude(path / "agent-a6c23b916066618fa.jsonl", subagent=True)
    assert said(reading) == [
        ("user", "SUBTASK: where is the glaze bucket?"),
        ("assistant", "Subagent report: the glaze bucket sits under the wedging table."),
    ]
    assert reading.header is not None and reading.header.parent_key == KILN_KEY


def test_a_rewound_branch_is_left_and_a_compaction_keeps_what_came_before() -> None:
    # Public sample (claude-code-log): the user went back and asked again, then compacted.
    reading = claude(CLAUDE / "-tmp" / "dag-compact-after-rewind.jsonl")
    assert [text for _role, text in said(reading)] == [
        "Start",
        "Ready",
        "Second attempt",
        "Second answer",
        "Keep going",
        "Kept going",
        "After compaction",
        "Final answer",
    ]


def test_a_compaction_naming_a_line_the_file_lacks_continues_from_the_last_message(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "uuid": "cb",
        "parentUuid": None,
        "logicalParentUuid": "not-in-this-file",
        "timestamp": "2026-12-06T10:02:00Z",
    }
    path.write_text(
        claude_line("u1", None, "user", "before the compaction", "2026-12-06T10:00:00Z")
        + claude_line(
            "a1", "u1", "assistant", [{"type": "text", "text": "noted"}], "2026-12-06T10:01:00Z"
        )
        + json.dumps(boundary)
        + "\n"
        + claude_line("u2", "cb", "user", "after it", "2026-12-06T10:03:00Z")
    )
    assert [text for _role, text in said(claude(path))] == [
        "before the compaction",
        "noted",
        "after it",
    ]


def test_subagents_written_inline_are_not_the_session(tmp_path: Path) -> None:
    inline = json.loads(claude_line("s1", None, "user", "SIDECHAIN task", "2026-12-06T10:01:00Z"))
    inline["isSidechain"] = True
    path = tmp_path / "s.jsonl"
    path.write_text(
        claude_line("u1", None, "user", "main question", "2026-12-06T10:00:00Z")
        + json.dumps(inline)
        + "\n"
        + claude_line(
            "a1",
            "u1",
            "assistant",
            [{"type": "text", "text": "main answer"}],
            "2026-12-06T10:02:00Z",
        )
    )
    reading = claude(path)
    assert said(reading) == [("user", "main question"), ("assistant", "main answer")]
    assert "s1" not in reading.parents


def test_what_claude_code_adds_to_a_user_turn_is_not_said(tmp_path: Path) -> None:
    meta = json.loads(claude_line("m", "u1", "user", "skill text", "2026-12-06T10:00:02Z"))
    meta["isMeta"] = True
    path = tmp_path / "s.jsonl"
    path.write_text(
        claude_line("u1", None, "user", "the real question", "2026-12-06T10:00:01Z")
        + json.dumps(meta)
        + "\n"
        + claude_line(
            "n", "m", "user", "<task-notification>\n<task-id>b1</task-id>", "2026-12-06T10:00:03Z"
        )
        + claude_line(
            "i",
            "n",
            "user",
            [{"type": "text", "text": "[Request interrupted by user]"}],
            "2026-12-06T10:00:04Z",
        )
        + claude_line(
            "c",
            "i",
            "user",
            "<command-name>/review</command-name>\n"
            "<command-message>review</command-message>\n"
            "<command-args>the login form</command-args>",
            "2026-12-06T10:00:05Z",
        )
        + claude_line(
            "o",
            "c",
            "user",
            "<local-command-stdout>done</local-command-stdout>",
            "2026-12-06T10:00:06Z",
        )
    )
    assert said(claude(path)) == [("user", "the real question"), ("user", "/review the login form")]


def test_rewinding_without_a_new_message_ends_the_branch_there(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rewound = {"type": "last-prompt", "leafUuid": "a1", "rewound": True, "sessionId": "s"}
    path.write_text(
        claude_line("u1", None, "user", "kept", "2026-12-06T10:00:00Z")
        + claude_line(
            "a1", "u1", "assistant", [{"type": "text", "text": "kept too"}], "2026-12-06T10:01:00Z"
        )
        + claude_line("u2", "a1", "user", "taken back", "2026-12-06T10:02:00Z")
        + json.dumps(rewound)
        + "\n"
    )
    assert [text for _r, text in said(claude(path))] == ["kept", "kept too"]


def test_bad_claude_code_lines_are_counted_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(
        claude_line("u1", None, "user", "first", "2026-12-06T10:00:00Z")
        + "{not json\n"
        + json.dumps({"uuid": "x"})
        + "\n"  # no type
        + json.dumps({"type": "user", "uuid": "y", "parentUuid": "u1"})
        + "\n"  # no message
        + json.dumps({"type": "hologram", "sessionId": "s"})
        + "\n"
        + claude_line(
            "a1", "u1", "assistant", [{"type": "text", "text": "second"}], "2026-12-06T10:01:00Z"
        )
    )
    reading = claude(path)
    assert (reading.skipped.malformed, reading.skipped.unknown) == (3, 1)
    assert [text for _r, text in said(reading)] == ["first", "second"]


def test_a_recorded_codex_session_is_its_prompts_and_answers() -> None:
    reading = codex(FIXTURES / CODEX_FILE)
    assert said(reading) == [
        ("user", "RUN: show the kiln schedule"),
        ("assistant", "The command printed the kiln schedule: cone six on Sundays."),
        ("user", "What is the celadon glaze recipe?"),
        ("assistant", "Celadon: 40 feldspar, 30 silica, 20 whiting, 10 kaolin."),
        ("user", "SPAWN a helper to find the glaze bucket"),
        ("assistant", "Under the wedging table, where the helper found it."),
        # The compaction's summary (an assistant message before the `compacted` record) is not
        # on the branch; the turn after it is.
        ("user", "Where is the glaze bucket kept?"),
        ("assistant", "Under the wedging table, where the helper found it."),
    ]
    everything = json.dumps([m.text for m in reading.messages.values()])
    for absent in (
        "environment_context",
        "permissions instructions",
        "Recalling the recipe",
        "subagent_notification",
        "echo cone six",
    ):
        assert absent not in everything
    assert reading.skipped.total == 0
    assert reading.header is not None and reading.header.parent_key is None
    assert reading.header.timestamp == "2026-12-06T20:18:10.194Z"


def test_codex_tool_calls_and_outputs_come_in_only_when_asked() -> None:
    branch = said(codex(FIXTURES / CODEX_FILE, tools=True))
    assert ("tool", 'exec_command {"cmd": "echo cone six on Sundays"}') in branch
    assert any(
        role == "tool" and "cone six on Sundays" in text and "exited" in text
        for role, text in branch
    )
    assert not any("Checking the schedule" in text for _role, text in branch)  # reasoning


def test_a_spawned_codex_agent_names_its_parent() -> None:
    path = next((CODEX / "sessions").rglob(f"*{CODEX_SUBAGENT_KEY.split('/')[1]}.jsonl"))
    reading = codex(path)
    assert said(reading) == [
        ("user", "SUBTASK: where is the glaze bucket?"),
        ("assistant", "Subagent report: the glaze bucket sits under the wedging table."),
    ]
    assert reading.header is not None and reading.header.parent_key == CODEX_KEY


def test_codex_events_that_repeat_messages_are_not_read_twice() -> None:
    # Public sample (claude-code-log): user_message/agent_message events beside the items,
    # tool calls, encrypted reasoning and a record type Codex does not write.
    path = next((CODEX / "sessions").rglob("*11111111-1111-4111-8111-111111111111.jsonl"))
    reading = codex(path)
    assert said(reading) == [
        ("user", "List the synthetic files."),
        ("assistant", "The synthetic files are alpha.txt and beta.txt."),
    ]
    assert (reading.skipped.malformed, reading.skipped.unknown) == (0, 1)


def test_a_codex_file_from_before_the_envelope() -> None:
    reading = codex(CODEX / "sessions" / "rollout-44444444-4444-4444-8444-444444444444.jsonl")
    assert said(reading) == [
        ("user", "Open the synthetic legacy session."),
        ("assistant", "The synthetic legacy session is open."),
    ]
    assert reading.header is not None and reading.header.session_id.startswith("44444444")


def test_rolled_back_codex_turns_leave_the_branch(tmp_path: Path) -> None:
    path = tmp_path / "rollout-x.jsonl"
    t = "2026-12-06T10:00:{:02d}Z"
    path.write_text(
        codex_line("user", "first question", t.format(1))
        + codex_line("assistant", "first answer", t.format(2))
        + codex_line("user", "second question", t.format(3))
        + codex_line("assistant", "second answer", t.format(4))
        + codex_line("user", "third question", t.format(5))
        + codex_event("event_msg", {"type": "thread_rolled_back", "num_turns": 2}, t.format(6))
    )
    assert [text for _r, text in said(codex(path))] == ["first question", "first answer"]
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(codex_line("user", "asked again", t.format(7)))
    assert [text for _r, text in said(codex(path))] == [
        "first question",
        "first answer",
        "asked again",
    ]


def test_a_rollback_past_what_an_append_read_asks_for_a_full_read(tmp_path: Path) -> None:
    path = tmp_path / "rollout-x.jsonl"
    t = "2026-12-06T10:00:{:02d}Z"
    path.write_text(
        codex_line("user", "one", t.format(1)) + codex_line("assistant", "two", t.format(2))
    )
    first = codex(path)
    start = ReadPosition(
        first.end.offset,
        first.end.lines,
        first.end.last_entry,
        first.last_message,
        tx.frontier_after(first, ReadPosition()),
    )
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(codex_line("user", "three", t.format(3)))
    tail = codex(path, start=start)
    assert [m.text for m in tx.appended_branch(tail, start) or []] == ["three"]
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(
            codex_event("event_msg", {"type": "thread_rolled_back", "num_turns": 2}, t.format(4))
        )
    assert tx.appended_branch(codex(path, start=start), start) is None
    assert said(codex(path)) == []


def test_bad_codex_lines_are_counted_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "rollout-x.jsonl"
    path.write_text(
        codex_line("user", "before", "2026-12-06T10:00:01Z")
        + "{synthetic malformed json\n"
        + json.dumps({"type": "response_item", "payload": "not an object"})
        + "\n"
        + codex_event("hologram", {"x": 1}, "2026-12-06T10:00:02Z")
        + codex_line("assistant", "after", "2026-12-06T10:00:03Z")
    )
    reading = codex(path)
    assert (reading.skipped.malformed, reading.skipped.unknown) == (2, 1)
    assert [text for _r, text in said(reading)] == ["before", "after"]


def test_every_fixture_is_found_under_its_key(tmp_path: Path) -> None:
    found, problems = find_transcripts(
        [
            TranscriptSource("claude-code", CLAUDE),
            TranscriptSource("codex", CODEX / "sessions"),
            TranscriptSource("codex", CODEX / "archived_sessions"),  # not there: nothing
        ]
    )
    assert {t.key for t in found} == FIXTURE_KEYS
    assert problems == []
    assert {t.client for t in found if t.key.startswith("codex/")} == {"codex"}
    assert {client_of_agent(t.agent) for t in found} == {"claude-code", "codex"}
    assert client_of_agent("main") == "paths"
    assert KILN_SUBAGENT_KEY in {t.key for t in found}


def test_helper_agents_and_other_files_are_not_transcripts(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-ada-kiln"
    shutil.copytree(CLAUDE / "-home-ada-kiln", project)
    subagents = project / KILN_SESSION / "subagents"
    (subagents / "agent-acompact-e1f845.jsonl").write_text("{}\n")  # compaction helper
    (project / "agent-a1b2c3d.jsonl").write_text("{}\n")  # an older version's subagent
    (project / ".hidden.jsonl").write_text("{}\n")
    (project / "memory").mkdir()
    (project / "memory" / "MEMORY.md").write_text("# notes\n")
    codex_root = tmp_path / "codex"
    (codex_root / "2026" / "12").mkdir(parents=True)
    (codex_root / "2026" / "12" / "history.jsonl").write_text("{}\n")
    (codex_root / "2026" / "12" / "rollout-2026-12-06T10-00-00-abc.jsonl").write_text("{}\n")
    found, _problems = find_transcripts(
        [
            TranscriptSource("claude-code", tmp_path / "projects"),
            TranscriptSource("codex", codex_root),
        ]
    )
    assert {t.key for t in found} == {
        f"{KILN_AGENT}/agent-a1b2c3d",
        KILN_KEY,
        KILN_SUBAGENT_KEY,
        "codex/2026-12-06T10-00-00-abc",  # no id at the end: the name after `rollout-`
    }


@pytest.mark.parametrize("tools", [False, True])
def test_every_fixture_reads_without_skipping_a_line(tools: bool) -> None:
    found, _problems = find_transcripts(
        [TranscriptSource("claude-code", CLAUDE), TranscriptSource("codex", CODEX / "sessions")]
    )
    for transcript in found:
        reading = tx.read_transcript(
            transcript.path, reader_for(transcript, tools), ReadPosition(), LIMIT
        )
        expected_unknown = 1 if "11111111" in transcript.key else 0
        assert reading.skipped == tx.LineCounts(0, expected_unknown, 0), transcript.key
        assert tx.active_branch(reading), transcript.key


@pytest.mark.parametrize("tools", [False, True])
def test_a_file_read_as_it_grows_gives_the_branch_of_a_full_read(
    tmp_path: Path, tools: bool
) -> None:
    """Every fixture written line by line, read after each line from where the last read
    stopped (a full read only when the append does not continue the branch): the messages
    kept are always those a full read finds, and a real session's parallel tool calls and
    hook lines never force a full read while tool calls are not indexed (a rewind does)."""
    found, _problems = find_transcripts(
        [TranscriptSource("claude-code", CLAUDE), TranscriptSource("codex", CODEX / "sessions")]
    )
    for transcript in found:
        lines = reader_for(transcript, tools)
        growing = tmp_path / "growing.jsonl"
        growing.write_bytes(b"")
        start, kept, full_reads = ReadPosition(), [], 0
        for line in transcript.path.read_bytes().splitlines(keepends=True):
            with open(growing, "ab") as handle:
                handle.write(line)
            reading = tx.read_transcript(growing, lines, start, LIMIT)
            appended = tx.appended_branch(reading, start)
            if appended is None:
                full_reads += 1
                reading = tx.read_transcript(growing, lines, ReadPosition(), LIMIT)
                kept, start = tx.active_branch(reading), tx.position_after(reading, ReadPosition())
            else:
                kept, start = kept + appended, tx.position_after(reading, start)
            whole = tx.read_transcript(growing, lines, ReadPosition(), LIMIT)
            assert [m.text for m in kept] == [m.text for m in tx.active_branch(whole)], (
                transcript.key,
                line,
            )
        rewound = transcript.key.endswith("dag-compact-after-rewind")  # a real full read
        if not tools and transcript.client == "claude-code" and not rewound:
            assert full_reads == 0, transcript.key
