"""Conversation memory evaluation (LoCoMo layout): conversations -> dated daily notes (or agent
transcripts) -> the real pipeline -> evidence recall.

Each conversation is one memory of its own. A session becomes `memory/YYYY-MM-DD-session-K.md`
(the session's date) with one paragraph per turn, `**Speaker** [D3:5]: text`; the tag lets a
result's line range be read back as the turns it holds. As transcripts, a session is one JSONL
file under `<root>/locomo/sessions/` with one message event per turn. A question is asked as
written, with the query settings under test, and scored by the share of its evidence turns
that the top k results hold (Recall@k), whether any is in the top 5 (Hit@5), and how many
turns the top 5 hold (what an agent must read).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from apus import paths
from apus.benchmarks.beir import DEFAULTS, Variant, _RememberingLeg
from apus.benchmarks.textbook_bm25 import TextbookBm25
from apus.config import Settings
from apus.errors import ConfigError
from apus.index.note_filter import NoteFilter
from apus.search.engine import Searcher
from apus.search.options import Mode, SearchOptions
from apus.search.results import SearchHit

Layout = Literal["notes", "transcripts"]
# The literature scores categories 1-4; 5 (adversarial: no answer in the conversation) apart.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
AGE_THIRDS = ("oldest", "middle", "newest")
_TAG = re.compile(r"D\d+:\d+")
_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")
# Transcripts are found under <root>/<agentId>/sessions/: one agent holds a conversation.
TRANSCRIPT_AGENT = "locomo"


@dataclass(frozen=True)
class Turn:
    tag: str  # "D3:5": session 3, turn 5
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    number: int
    when: dt.datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]  # turn tags that exist in the conversation


@dataclass(frozen=True)
class Conversation:
    name: str
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    def third_of(self, tag: str) -> int:
        """0, 1 or 2: whether the turn's session is in the oldest, middle or newest third."""
        numbers = sorted(s.number for s in self.sessions)
        position = numbers.index(int(tag[1:].split(":")[0]))
        return min(position * 3 // len(numbers), 2)

    @property
    def last_day(self) -> dt.date:
        return max(s.when for s in self.sessions).date()


@dataclass
class Tally:
    """Sums over questions; the means are read off at the end."""

    questions: int = 0
    recall_5: float = 0.0
    recall_10: float = 0.0
    hit_5: int = 0
    turns_5: int = 0

    def add(self, recall_5: float, recall_10: float, hit_5: bool, turns_5: int) -> None:
        self.questions += 1
        self.recall_5 += recall_5
        self.recall_10 += recall_10
        self.hit_5 += int(hit_5)
        self.turns_5 += turns_5

    def mean(self, total: float) -> float:
        return total / self.questions if self.questions else 0.0


@dataclass(frozen=True)
class ConversationMetrics:
    mode: str  # a search Mode, or "bm25/session" and "bm25/turn" for the references
    questions: int
    recall_at_5: float
    recall_at_10: float
    hit_at_5: float
    turns_at_5: float  # turns the top 5 hold, on average
    by_category: dict[str, dict[str, float]]  # name -> {questions, recall_at_5, hit_at_5}
    # Mean Recall@5 of the questions whose evidence lies in each third of the sessions.
    recall_at_5_by_age: dict[str, float]
    reranked: float = 0.0  # the share of questions the second stage reranked


@dataclass
class _Accumulator:
    all: Tally = field(default_factory=Tally)
    categories: dict[int, Tally] = field(default_factory=dict)
    age_recall: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    age_total: list[int] = field(default_factory=lambda: [0, 0, 0])
    reranked: int = 0

    def add(
        self, conversation: Conversation, question: Question, ranked: Sequence[set[str]]
    ) -> None:
        wanted = set(question.evidence)
        top5 = set().union(*ranked[:5]) if ranked else set()
        top10 = set().union(*ranked[:10]) if ranked else set()
        recall_5 = len(wanted & top5) / len(wanted)
        recall_10 = len(wanted & top10) / len(wanted)
        hit = bool(wanted & top5)
        self.all.add(recall_5, recall_10, hit, len(top5))
        self.categories.setdefault(question.category, Tally()).add(
            recall_5, recall_10, hit, len(top5)
        )
        # A question counts in each third of the conversation its evidence lies in.
        for third in {conversation.third_of(tag) for tag in wanted}:
            self.age_total[third] += 1
            self.age_recall[third] += recall_5

    def metrics(self, mode: str) -> ConversationMetrics:
        t = self.all
        by_category = {
            CATEGORIES[number]: {
                "questions": float(tally.questions),
                "recall_at_5": tally.mean(tally.recall_5),
                "hit_at_5": tally.mean(tally.hit_5),
            }
            for number, tally in sorted(self.categories.items())
        }
        by_age = {
            name: (self.age_recall[i] / self.age_total[i] if self.age_total[i] else 0.0)
            for i, name in enumerate(AGE_THIRDS)
        }
        return ConversationMetrics(
            mode,
            t.questions,
            t.mean(t.recall_5),
            t.mean(t.recall_10),
            t.mean(t.hit_5),
            t.mean(t.turns_5),
            by_category,
            by_age,
            t.mean(self.reranked),
        )


# -- loading ----------------------------------------------------------------------------------


def load_conversations(folder: Path, only: Iterable[str] = ()) -> list[Conversation]:
    """Every `*.json` conversation in `folder` (or those named in `only`, by file stem)."""
    wanted = set(only)
    files = sorted(folder.glob("*.json"))
    if wanted:
        files = [f for f in files if f.stem in wanted]
        missing = wanted - {f.stem for f in files}
        if missing:
            raise ConfigError(
                f"No conversation named {', '.join(sorted(missing))} in {folder}.",
                fix=f"name one of: {', '.join(f.stem for f in sorted(folder.glob('*.json')))}",
            )
    if not files:
        raise ConfigError(
            f"{folder} holds no conversation (*.json in the LoCoMo layout).",
            fix="apus eval --locomo DIR, with DIR holding conv-N.json files",
        )
    return [parse_conversation(f.stem, json.loads(f.read_text(encoding="utf-8"))) for f in files]


def parse_conversation(name: str, data: Mapping[str, object]) -> Conversation:
    """One LoCoMo conversation: its dated sessions and its questions of categories 1-4 whose
    evidence names turns the conversation has (a few annotations name none)."""
    sessions = []
    for key, turns in data.items():
        match = _SESSION_KEY.fullmatch(key)
        if match is None or not isinstance(turns, list) or not turns:
            continue
        when = _parse_when(str(data.get(f"{key}_date_time", "")), name, key)
        sessions.append(Session(int(match.group(1)), when, tuple(_turn(t) for t in turns)))
    sessions.sort(key=lambda s: s.number)
    known = {turn.tag for session in sessions for turn in session.turns}
    questions = []
    qa = data.get("qa")
    for row in qa if isinstance(qa, list) else []:
        category = int(row.get("category", 0))
        evidence = tuple(
            dict.fromkeys(
                tag for item in row.get("evidence", []) for tag in _TAG.findall(str(item))
            )
        )
        evidence = tuple(tag for tag in evidence if tag in known)
        if category in CATEGORIES and evidence:
            questions.append(Question(str(row["question"]), category, evidence))
    return Conversation(name, tuple(sessions), tuple(questions))


def _turn(raw: Mapping[str, object]) -> Turn:
    text = str(raw.get("text", ""))
    caption = raw.get("blip_caption")
    if caption:
        text = f"{text} (shares a photo: {caption})"
    return Turn(str(raw["dia_id"]).strip(), str(raw.get("speaker", "")), text)


def _parse_when(raw: str, name: str, key: str) -> dt.datetime:
    for layout in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(raw.strip(), layout)
        except ValueError:
            continue
    raise ConfigError(
        f"{name}: `{key}_date_time` is {raw!r}, not a date like `1:56 pm on 8 May, 2023`.",
        fix="use the LoCoMo v2 layout (session_K_date_time beside each session_K)",
    )


# -- writing the memory -----------------------------------------------------------------------


@dataclass(frozen=True)
class TurnLines:
    """Where each turn is: store path -> line number -> turn tag."""

    lines: dict[str, dict[int, str]]

    def turns_of(self, hit: SearchHit) -> set[str]:
        lines = self.lines.get(hit.path, {})
        return {lines[n] for n in range(hit.start_line, hit.end_line + 1) if n in lines}


def conversation_root(folder: Path, layout: str, name: str) -> Path:
    """The cache folder of one conversation's vault and indexes, kept between runs."""
    key = hashlib.sha256(f"{folder.resolve()}:{layout}".encode()).hexdigest()[:12]
    return paths.cache_dir() / "eval" / f"locomo-{key}" / name


def note_path(session: Session) -> str:
    return f"memory/{session.when:%Y-%m-%d}-session-{session.number}.md"


def write_notes(conversation: Conversation, vault: Path) -> TurnLines:
    """One dated daily note per session, one paragraph per turn."""
    lines: dict[str, dict[int, str]] = {}
    for session in conversation.sessions:
        rel = note_path(session)
        body = [f"# Session {session.number}, {session.when:%d %B %Y, %H:%M}", ""]
        where: dict[int, str] = {}
        for turn in session.turns:
            where[len(body) + 1] = turn.tag
            body.extend([f"**{turn.speaker}** [{turn.tag}]: {turn.text}", ""])
        _write_if_changed(vault / rel, "\n".join(body))
        lines[rel] = where
    return TurnLines(lines)


def write_transcripts(conversation: Conversation, root: Path) -> TurnLines:
    """One JSONL transcript per session: a header, then one message per turn (the first
    speaker as the user, the other as the assistant), stamped with the session's time."""
    from apus.vault.transcripts import store_path

    folder = root / TRANSCRIPT_AGENT / "sessions"
    first = conversation.sessions[0].turns[0].speaker if conversation.sessions else ""
    lines: dict[str, dict[int, str]] = {}
    for session in conversation.sessions:
        stamp = session.when.strftime("%Y-%m-%dT%H:%M:%SZ")
        session_id = f"session-{session.number:03d}"
        events: list[dict[str, object]] = [
            {"type": "session", "id": session_id, "timestamp": stamp}
        ]
        where: dict[int, str] = {}
        for number, turn in enumerate(session.turns):
            where[len(events) + 1] = turn.tag
            role = "user" if turn.speaker == first else "assistant"
            events.append(
                {
                    "type": "message",
                    "id": f"m{number}",
                    "parentId": f"m{number - 1}" if number else None,
                    "timestamp": stamp,
                    "message": {
                        "role": role,
                        "content": [
                            {
                                "type": "text",
                                "text": f"**{turn.speaker}** [{turn.tag}]: {turn.text}",
                            }
                        ],
                    },
                }
            )
        text = "".join(json.dumps(event) + "\n" for event in events)
        _write_if_changed(folder / f"{session_id}.jsonl", text)
        lines[store_path(f"{TRANSCRIPT_AGENT}/{session_id}")] = where
    return TurnLines(lines)


def _write_if_changed(path: Path, text: str) -> None:
    """Rewriting an unchanged file would make the next run's sync re-read it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


# -- scoring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConversationRun:
    """One conversation's memory, ready to ask: the settings of each variant and its layout."""

    conversation: Conversation
    settings_for: Callable[[Mapping[str, object]], Settings]
    turn_lines: TurnLines
    filters: NoteFilter = field(default_factory=NoteFilter)  # transcripts: both sources


@dataclass(frozen=True)
class LocomoResult:
    variant: Variant
    metrics: list[ConversationMetrics]


def evaluate_conversations(
    runs: Sequence[ConversationRun],
    modes: Sequence[Mode],
    *,
    variants: Sequence[Variant] = (DEFAULTS,),
    today: Callable[[Conversation], dt.date] | None = None,
    on_question: Callable[[str, int, int], None] | None = None,
) -> list[LocomoResult]:
    """Ask every question of every conversation in every mode under every variant, with the
    product's defaults for whatever a variant does not set (minScore and MMR included).
    `today(conversation)` is the date recency is measured from (None: the machine's date)."""
    from apus.benchmarks.rerank_scores import ScoreStore, remembering_reranker
    from apus.memory import Memory

    tallies = {(v.label, m): _Accumulator() for v in variants for m in modes}
    total = sum(len(run.conversation.questions) for run in runs)
    asked = 0
    store = ScoreStore()
    for run in runs:
        conversation = run.conversation
        first = Memory(settings=run.settings_for(variants[0].overrides))
        real = first.searcher().vector_leg
        leg = _RememberingLeg(real) if real is not None else None
        day = today(conversation) if today is not None else None
        try:
            for variant in variants:
                settings = run.settings_for(variant.overrides)
                searcher = Searcher(
                    settings,
                    vector_leg=leg,
                    strict=first.strict,
                    today=dt.date.today if day is None else _fixed(day),
                    reranker=remembering_reranker(settings.search.rerank, store),
                )
                try:
                    for mode in modes:
                        options = SearchOptions(mode=mode, filters=run.filters)
                        accumulator = tallies[(variant.label, mode)]
                        for question in conversation.questions:
                            response = searcher.search(question.text, options)
                            rerank = response.legs.get("rerank")
                            accumulator.reranked += rerank is not None and rerank.ran
                            ranked = [run.turn_lines.turns_of(hit) for hit in response.hits]
                            accumulator.add(conversation, question, ranked)
                finally:
                    searcher.reranker.close()
                    searcher.close()
        finally:
            first.close()
        asked += len(conversation.questions)
        if on_question is not None:
            on_question(conversation.name, asked, total)
    store.close()
    return [LocomoResult(v, [tallies[(v.label, m)].metrics(m) for m in modes]) for v in variants]


def _fixed(day: dt.date) -> Callable[[], dt.date]:
    """A clock that always reads `day`."""
    return lambda: day


def textbook_reference(
    conversations: Sequence[Conversation], unit: Literal["session", "turn"] = "session"
) -> ConversationMetrics:
    """The textbook BM25 over whole sessions (or single turns) of each conversation."""
    accumulator = _Accumulator()
    for conversation in conversations:
        units: dict[str, tuple[set[str], str]] = {}
        for session in conversation.sessions:
            if unit == "session":
                text = "\n".join(f"{t.speaker}: {t.text}" for t in session.turns)
                units[f"s{session.number}"] = ({t.tag for t in session.turns}, text)
            else:
                for t in session.turns:
                    units[t.tag] = ({t.tag}, f"{t.speaker}: {t.text}")
        bm25 = TextbookBm25({key: text for key, (_tags, text) in units.items()})
        for question in conversation.questions:
            ranked = [units[key][0] for key in bm25.search(question.text, 10)]
            accumulator.add(conversation, question, ranked)
    return accumulator.metrics(f"bm25/{unit}")
