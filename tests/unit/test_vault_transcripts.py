"""Reading transcripts: the active branch, what is text, half-written and skipped lines,
appends, and chunks by turns."""

from __future__ import annotations

import json
from pathlib import Path

from apus.vault import transcripts as tx
from apus.vault.transcripts import Message, ReadPosition
from support.transcripts import (
    append,
    header,
    lines,
    message,
    tool_result,
    write_transcript,
)

LIMIT = 1 << 20
T = "2026-11-20T10:00:{:02d}Z"


def read(path: Path, start: ReadPosition | None = None, limit: int = LIMIT) -> tx.Reading:
    return tx.read_transcript(path, tx.AgentLines("main"), start or ReadPosition(), limit)


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


def test_only_user_and_assistant_text_on_the_active_branch(tmp_path: Path) -> None:
    path = write_transcript(
        tmp_path,
        "main/s1",
        [
            header("s1", T.format(0)),
            message("a", None, "user", "How do I rotate the deploy key?", T.format(1)),
            message(
                "b",
                "a",
                "assistant",
                "Let me check.",
                T.format(2),
                thinking="THINKING-SECRET about keys",
                tool_call="cat TOOLCALL-SECRET",
            ),
            tool_result("c", "b", "TOOLRESULT-SECRET output", T.format(3)),
            message("d", "c", "assistant", "Run `keys rotate --all`.", T.format(4)),
            # An abandoned branch: the user went back and asked differently.
            message("e", "a", "assistant", "ABANDONED answer", T.format(5)),
            message("f", "a", "user", "Actually, the staging key.", T.format(6)),
            {"type": "model_change", "id": "g", "parentId": "f", "timestamp": T.format(7)},
            message("h", "g", "assistant", "Staging: `keys rotate --env staging`.", T.format(8)),
        ],
    )
    reading = read(path)
    branch = tx.active_branch(reading)
    assert texts(branch) == [
        "How do I rotate the deploy key?",
        "Actually, the staging key.",
        "Staging: `keys rotate --env staging`.",
    ]
    assert [m.line for m in branch] == [2, 7, 9]
    everything = json.dumps([m.text for m in reading.messages.values()])
    assert "SECRET" not in everything
    assert reading.skipped.total == 0
    assert reading.header is not None and reading.header.session_id == "s1"
    assert reading.last_timestamp == "2026-11-20T10:00:08.000Z"


def test_string_content_and_the_linear_format_without_ids(tmp_path: Path) -> None:
    path = tmp_path / "main" / "sessions" / "old.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(
        lines(
            [
                {"type": "session", "id": "old", "timestamp": T.format(0)},
                {"type": "message", "message": {"role": "user", "content": "plain string"}},
                {"type": "message", "message": {"role": "assistant", "content": "reply"}},
            ]
        ),
        encoding="utf-8",
    )
    assert texts(tx.active_branch(read(path))) == ["plain string", "reply"]


def test_a_half_written_last_line_waits_and_a_whole_one_does_not(tmp_path: Path) -> None:
    events = [header("s1", T.format(0)), message("a", None, "user", "first", T.format(1))]
    path = write_transcript(tmp_path, "main/s1", events)
    whole = json.dumps(message("b", "a", "assistant", "second", T.format(2)))
    append(path, whole[:25])
    reading = read(path)
    assert texts(tx.active_branch(reading)) == ["first"]
    assert reading.end.offset == len(lines(events).encode())  # stops before the partial line
    assert reading.skipped.total == 0  # not malformed: unfinished
    append(path, whole[25:])  # complete, but still without its newline
    assert texts(tx.active_branch(read(path))) == ["first", "second"]


def test_malformed_unknown_and_oversized_lines_are_counted(tmp_path: Path) -> None:
    path = write_transcript(tmp_path, "main/s1", [header("s1", T.format(0))])
    append(path, "{not json\n")
    append(path, "[1, 2]\n")  # JSON, but not an event
    append(path, json.dumps({"type": "message", "id": "x", "parentId": None}) + "\n")
    append(path, json.dumps({"type": "telemetry", "id": "t"}) + "\n")
    append(path, json.dumps(message("a", None, "user", "x" * 3000, T.format(1))) + "\n")
    append(path, json.dumps(message("b", None, "user", "kept", T.format(2))) + "\n")
    append(path, "\n")  # blank lines are nothing
    reading = read(path, limit=2048)
    assert (reading.skipped.malformed, reading.skipped.unknown, reading.skipped.oversized) == (
        3,
        1,
        1,
    )
    assert texts(tx.active_branch(reading)) == ["kept"]


def test_an_append_continues_the_branch_or_asks_for_a_full_read(tmp_path: Path) -> None:
    events = [
        header("s1", T.format(0)),
        message("a", None, "user", "one", T.format(1)),
        message("b", "a", "assistant", "two", T.format(2)),
        {"type": "thinking_level_change", "id": "c", "parentId": "b", "timestamp": T.format(3)},
    ]
    path = write_transcript(tmp_path, "main/s1", events)
    first = read(path)
    start = ReadPosition(
        first.end.offset,
        first.end.lines,
        first.end.last_entry,
        first.last_message,
        tx.frontier_after(first, ReadPosition()),
    )
    assert set(start.frontier) == {"b", "c"}
    append(path, lines([message("d", "c", "user", "three", T.format(4))]))
    tail = read(path, start)
    appended = tx.appended_branch(tail, start)
    assert appended is not None and texts(appended) == ["three"]
    assert appended[0].line == 5
    # Going back to an earlier message is not an append: the file is read again.
    append(path, lines([message("e", "a", "assistant", "two, again", T.format(5))]))
    assert tx.appended_branch(read(path, start), start) is None


def test_parent_session_forms() -> None:
    assert tx.parent_key("/x/agents/main/sessions/abc.jsonl", "other") == "main/abc"
    assert tx.parent_key("helper/abc", "main") == "helper/abc"
    assert tx.parent_key("abc", "main") == "main/abc"
    assert tx.parent_key(None, "main") is None


def test_timestamps_become_utc_iso() -> None:
    assert tx.normalise_timestamp("2026-11-20T12:00:00+02:00") == "2026-11-20T10:00:00.000Z"
    assert tx.normalise_timestamp(1_795_000_000_000) == tx.normalise_timestamp(1_795_000_000)
    assert tx.normalise_timestamp("yesterday") == ""
    assert tx.normalise_timestamp(True) == ""


def _messages(*pairs: tuple[str, str]) -> list[Message]:
    return [
        Message(f"m{i}", i + 2, T.format(i), role, text) for i, (role, text) in enumerate(pairs)
    ]


def test_chunks_never_split_a_message_unless_it_alone_is_too_big() -> None:
    words = " ".join(f"word{i}" for i in range(30))  # about 40 tokens
    messages = _messages(
        ("user", words), ("assistant", words), ("user", words), ("assistant", "ok")
    )
    chunks = tx.chunk_messages(messages, max_tokens=100)
    for chunk in chunks:
        parts = chunk.text.split("\n\n")
        assert all(part.startswith(("User: ", "Assistant: ")) for part in parts)
        assert chunk.tokens <= 100
    joined = "\n\n".join(chunk.text for chunk in chunks)
    assert joined == "\n\n".join(
        f"{'User' if m.role == 'user' else 'Assistant'}: {m.text}" for m in messages
    )
    assert [c.start_line for c in chunks] == [2, 4]
    assert [c.ordinal for c in chunks] == [0, 1]
    # A user turn starts a chunk when the one being filled is at least half full, even with
    # room left; a short turn joins it.
    short = " ".join(f"w{i}" for i in range(25))  # about 33 tokens
    turns = _messages(("user", short), ("assistant", short), ("user", "and?"), ("assistant", "so"))
    assert [c.start_line for c in tx.chunk_messages(turns, max_tokens=100)] == [2, 4]
    assert [c.start_line for c in tx.chunk_messages(turns, max_tokens=200)] == [2]

    huge = _messages(("user", " ".join(f"w{i}" for i in range(400))), ("assistant", "noted"))
    pieces = tx.chunk_messages(huge, max_tokens=64)
    assert len(pieces) > 2
    assert all(c.tokens <= 64 and (c.start_line, c.end_line) == (2, 2) for c in pieces[:-1])
    assert " ".join(c.text for c in pieces[:-1]).split()[1:] == [f"w{i}" for i in range(400)]
    # What follows a split message starts a chunk of its own: no chunk begins inside a
    # message and goes on past it.
    assert (pieces[-1].text, pieces[-1].start_line) == ("Assistant: noted", 3)


def test_rechunking_from_a_chunk_start_gives_the_same_chunks() -> None:
    messages = _messages(
        *[("user" if i % 2 == 0 else "assistant", f"text {i} " * 9) for i in range(40)]
    )
    whole = tx.chunk_messages(messages, max_tokens=60)
    cut = whole[3]
    start = next(i for i, m in enumerate(messages) if m.line == cut.start_line)
    again = tx.chunk_messages(messages[start:], max_tokens=60, first_ordinal=cut.ordinal)
    assert [(c.ordinal, c.text) for c in again] == [(c.ordinal, c.text) for c in whole[3:]]
