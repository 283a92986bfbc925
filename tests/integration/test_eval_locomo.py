"""`apus eval --locomo` on a tiny generated conversation: the daily-note and transcript layouts,
evidence recall read back from result line ranges, categories, evidence age, and the textbook
references beside the product."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apus.benchmarks.locomo import (
    load_conversations,
    parse_conversation,
    textbook_reference,
    write_notes,
)
from apus.errors import ConfigError
from support.vaults import run_apus, run_json

# Six sessions over a year: each holds one distinctive fact among small talk.
FACTS = [
    ("1:56 pm on 8 May, 2023", "I adopted a greyhound called Pepper from the shelter."),
    ("10:37 am on 27 June, 2023", "My sister moved to Lisbon for a job at the aquarium."),
    ("8:18 pm on 14 August, 2023", "We planted a quince tree behind the garage."),
    ("9:02 am on 3 November, 2023", "I started learning the cello with a teacher downtown."),
    ("4:15 pm on 20 January, 2024", "The kayak club elected me treasurer this winter."),
    ("6:40 pm on 2 May, 2024", "We painted the kitchen a pale saffron yellow."),
]
SMALL_TALK = ["Hey, how have you been?", "Pretty good, busy week.", "Talk soon, take care!"]
QUESTIONS = [
    ("What breed is Pepper, the dog adopted from the shelter?", ["D1:2"], 4),
    ("Where did the sister move for the aquarium job?", ["D2:2"], 4),
    ("When was the quince tree planted?", ["D3:2"], 2),
    ("Which instrument, the cello, and which club treasurer?", ["D4:2", "D5:2"], 1),
    ("What colour is the kitchen painted?", ["D6:2"], 3),
    ("What did they say about the moon landing?", ["D2:1"], 5),  # adversarial: not scored
    ("A question whose evidence names no turn", ["D9:99"], 4),  # not scored either
]


def _conversation() -> dict[str, Any]:
    data: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for number, (when, fact) in enumerate(FACTS, start=1):
        turns = [SMALL_TALK[0], fact, *SMALL_TALK[1:]]
        data[f"session_{number}_date_time"] = when
        data[f"session_{number}"] = [
            {"speaker": "Ana" if i % 2 == 0 else "Ben", "dia_id": f"D{number}:{i + 1}", "text": t}
            for i, t in enumerate(turns)
        ]
    data["session_3"][1]["blip_caption"] = "a photo of a young quince tree"
    data["qa"] = [
        {"question": q, "answer": "-", "evidence": evidence, "category": category}
        for q, evidence, category in QUESTIONS
    ]
    return data


@pytest.fixture
def conversations(tmp_path: Path) -> Path:
    folder = tmp_path / "locomo"
    folder.mkdir()
    (folder / "conv-1.json").write_text(json.dumps(_conversation()), encoding="utf-8")
    return folder


def test_a_conversation_becomes_dated_daily_notes_with_tagged_turns(tmp_path: Path) -> None:
    conversation = parse_conversation("conv-1", _conversation())
    assert len(conversation.sessions) == 6
    assert [q.category for q in conversation.questions] == [4, 4, 2, 1, 3]  # 5 and unknown out
    lines = write_notes(conversation, tmp_path / "vault")
    note = tmp_path / "vault" / "memory" / "2023-08-14-session-3.md"
    text = note.read_text(encoding="utf-8").splitlines()
    where = lines.lines["memory/2023-08-14-session-3.md"]
    assert text[where_of(where, "D3:2") - 1] == (
        "**Ben** [D3:2]: We planted a quince tree behind the garage. "
        "(shares a photo: a photo of a young quince tree)"
    )
    assert conversation.third_of("D1:2") == 0
    assert conversation.third_of("D4:2") == 1
    assert conversation.third_of("D6:2") == 2


def where_of(lines: dict[int, str], tag: str) -> int:
    return next(number for number, found in lines.items() if found == tag)


def test_eval_locomo_scores_evidence_recall_per_category_and_age(conversations: Path) -> None:
    data = run_json(
        "eval", "--locomo", conversations, "--json", "--set", "hybrid.mmr.enabled=false"
    )
    assert data["conversations"] == ["conv-1"]
    assert data["layout"] == "notes"
    defaults, no_mmr = data["runs"]
    assert no_mmr["overrides"] == {"memory.search.query.hybrid.mmr.enabled": False}
    (keyword,) = defaults["modes"]
    assert keyword["mode"] == "keyword"
    assert keyword["questions"] == 5
    # Each fact's words are in its evidence turn only: exact words find every one, the oldest
    # (a year before the newest, decayed from the machine's date) as surely as the newest.
    assert keyword["recall_at_5"] == 1.0
    assert keyword["recall_at_10"] == 1.0
    assert keyword["hit_at_5"] == 1.0
    assert keyword["recall_at_5_by_age"] == {"oldest": 1.0, "middle": 1.0, "newest": 1.0}
    assert set(keyword["by_category"]) == {"multi-hop", "temporal", "open-domain", "single-hop"}
    assert keyword["by_category"]["multi-hop"]["questions"] == 1
    # A note is one chunk: the top 5 hold at most every turn of the conversation.
    assert 4 <= keyword["turns_at_5"] <= 24
    sessions, turns = data["reference"]
    assert sessions["mode"] == "bm25/session" and turns["mode"] == "bm25/turn"
    assert turns["recall_at_5"] == 1.0
    assert turns["turns_at_5"] <= 5


def test_eval_locomo_recency_from_the_day_after_the_last_session(conversations: Path) -> None:
    """With "today" right after the conversation, the oldest session is a year old (decay
    2^-12): exact, unique words still find it first under the shipped defaults."""
    data = run_json("eval", "--locomo", conversations, "--json", "--today", "after-last")
    keyword = data["runs"][0]["modes"][0]
    assert keyword["recall_at_5_by_age"]["oldest"] == 1.0
    assert keyword["recall_at_5"] == 1.0


def test_eval_locomo_as_transcripts(conversations: Path) -> None:
    data = run_json("eval", "--locomo", conversations, "--json", "--layout", "transcripts")
    keyword = data["runs"][0]["modes"][0]
    assert data["layout"] == "transcripts"
    assert keyword["questions"] == 5
    assert keyword["recall_at_5"] == 1.0


def test_eval_locomo_table_and_errors(conversations: Path, tmp_path: Path) -> None:
    table = run_apus("eval", "--locomo", conversations).stdout
    assert "R@5" in table and "bm25/session" in table and "keyword" in table
    wrong = run_apus("eval", "--locomo", conversations, "--conversations", "conv-9", expect=1)
    assert "No conversation named conv-9" in wrong.stderr and "conv-1" in wrong.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no conversation" in run_apus("eval", "--locomo", empty, expect=1).stderr
    both = run_apus("eval", "--locomo", conversations, "--beir", conversations, expect=2)
    assert "Give one of" in both.stderr
    bad_day = run_apus("eval", "--locomo", conversations, "--today", "soon", expect=1)
    assert "is not a date" in bad_day.stderr


def test_load_and_reference_directly(conversations: Path) -> None:
    (conversation,) = load_conversations(conversations)
    assert conversation.last_day.isoformat() == "2024-05-02"
    with pytest.raises(ConfigError, match="conv-2"):
        load_conversations(conversations, ["conv-2"])
    reference = textbook_reference([conversation], "session")
    assert reference.questions == 5
    assert reference.recall_at_5 == 1.0  # six sessions: the top 5 of them hold the evidence
