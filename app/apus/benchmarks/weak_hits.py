"""How weak is a vector-only hit: the raw cosine of passages that answer a question against the
best that a vault which cannot answer it returns, and what a threshold on it would flag.

Questions are asked where they can be answered (a LoCoMo question in its own conversation, a
SciFact claim in the SciFact vault) and where they cannot (in another conversation; claims in
a conversation; conversation questions among the abstracts). Every hit of the top 5 is kept
with its legs and its cosine; a hit that holds an evidence turn or a judged document is
relevant. The tuning half (conversations conv-26, conv-30, conv-41; odd claim ids) chooses,
the held-out half (conv-42, conv-43; even ids) reports:

    .venv/bin/python tests/support/weak_hits.py --locomo DIR --beir DIR --qrels FILE --model M.gguf

Vaults and embeddings are those `apus eval` keeps in the cache folder (the SciFact vault with
`--limit-docs`, 1500 by default: every judged document and distractors).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from apus.benchmarks.beir import (
    Split,
    eval_settings,
    index_name,
    load_collection,
    select_queries,
    workspace,
    write_vault,
)
from apus.benchmarks.locomo import (
    Conversation,
    TurnLines,
    conversation_root,
    load_conversations,
    write_notes,
)
from apus.config import Settings
from apus.search.options import SearchOptions
from apus.search.results import SearchHit
from apus.search.weak import threshold_for

TUNING = ("conv-26", "conv-30", "conv-41")
HELD_OUT = ("conv-42", "conv-43")
TOP = 5
GRID = [round(0.05 + 0.01 * step, 2) for step in range(86)]


@dataclass(frozen=True)
class Seen:
    """One hit of the top 5."""

    half: str  # "tuning" or "held-out"
    vault: str  # "conversations" or "documents"
    answerable: bool
    question: str  # an id unique over the run: the asking, then the question
    legs: tuple[str, ...]
    vector_raw: float | None
    text_raw: float | None
    relevant: bool

    @property
    def vector_only(self) -> bool:
        return self.legs == ("vector",)


@dataclass(frozen=True)
class _Ask:
    """Questions put to one vault: their ids, texts, and which hits answer each."""

    label: str
    half: str
    answerable: bool
    questions: Sequence[tuple[str, str, Callable[[SearchHit], bool]]]


def _never(_hit: SearchHit) -> bool:
    return False


def _conversation_questions(
    conversation: Conversation, lines: TurnLines | None
) -> list[tuple[str, str, Callable[[SearchHit], bool]]]:
    """Its questions; with `lines` (its own vault), a hit holding an evidence turn answers."""
    asked = []
    for number, question in enumerate(conversation.questions):
        wanted = set(question.evidence)
        if lines is None:
            answers: Callable[[SearchHit], bool] = _never
        else:

            def answers(hit: SearchHit, wanted: set[str] = wanted) -> bool:
                return bool(lines.turns_of(hit) & wanted)

        asked.append((f"{conversation.name}#{number}", question.text, answers))
    return asked


def collect(
    locomo: Path,
    beir: Path,
    qrels: Path,
    model: str,
    limit_docs: int,
    on_vault: Callable[[str], None],
) -> tuple[list[Seen], float | None]:
    """Every top-5 hit of every asking, and the shipped threshold of the model."""
    return _ask_all(_vaults(locomo, beir, qrels, model, limit_docs), on_vault)


_HALVES: tuple[tuple[str, Split], ...] = (("tuning", "odd"), ("held-out", "even"))


def _vaults(
    locomo: Path, beir: Path, qrels: Path, model: str, limit_docs: int
) -> dict[str, tuple[Settings, list[_Ask]]]:
    """Each vault (the conversations, the documents) with the askings put to it."""
    conversations = {c.name: c for c in load_conversations(locomo, TUNING + HELD_OUT)}
    collection = load_collection(beir, qrels, limit_docs)
    halves = {half: select_queries(collection.queries, split) for half, split in _HALVES}
    docs_root = workspace(beir, limit_docs)
    mapping = write_vault(collection, docs_root / "vault")
    vaults: dict[str, tuple[Settings, list[_Ask]]] = {}
    lines: dict[str, TurnLines] = {}
    for name, conversation in conversations.items():
        root = conversation_root(locomo, "notes", name)
        lines[name] = write_notes(conversation, root / "vault")
        settings = eval_settings(
            root / "vault", root / "index" / index_name(model, ""), model, "", {}
        )
        vaults[name] = (settings, [])
    docs_settings = eval_settings(
        docs_root / "vault", docs_root / "index" / index_name(model, ""), model, "", {}
    )
    vaults["scifact"] = (docs_settings, [])

    for half, names in (("tuning", TUNING), ("held-out", HELD_OUT)):
        for position, name in enumerate(names):
            other = names[(position + 1) % len(names)]
            own = _conversation_questions(conversations[name], lines[name])
            vaults[name][1].append(_Ask(f"{name} in {name}", half, True, own))
            foreign = _conversation_questions(conversations[name], None)
            vaults[other][1].append(_Ask(f"{name} in {other}", half, False, foreign))
            vaults["scifact"][1].append(_Ask(f"{name} in scifact", half, False, foreign))
        claims = list(halves[half].items())

        def judged(query_id: str) -> Callable[[SearchHit], bool]:
            relevant = collection.qrels[query_id]
            return lambda hit: mapping.get(hit.path) in relevant

        vaults["scifact"][1].append(
            _Ask(
                f"scifact {half} in scifact",
                half,
                True,
                [(f"claim {q}", text, judged(q)) for q, text in claims],
            )
        )
        # Each claim is put to one conversation of its half, in turn.
        for position, name in enumerate(names):
            mine = claims[position :: len(names)]
            put = [(f"claim {q}", text, _never) for q, text in mine]
            vaults[name][1].append(_Ask(f"scifact {half} in {name}", half, False, put))
    return vaults


def _ask_all(
    vaults: dict[str, tuple[Settings, list[_Ask]]], on_vault: Callable[[str], None]
) -> tuple[list[Seen], float | None]:
    from apus.memory import Memory

    seen: list[Seen] = []
    threshold: float | None = None
    for name, (settings, asks) in vaults.items():
        on_vault(name)
        kind = "documents" if name == "scifact" else "conversations"
        with Memory(settings=settings) as memory:
            memory.sync()
            threshold = threshold_for(memory.provider.embedder)
            for ask in asks:
                for question_id, text, answers in ask.questions:
                    hits = memory.search(text, SearchOptions(limit=TOP)).hits
                    for hit in hits[:TOP]:
                        seen.append(
                            Seen(
                                ask.half,
                                kind,
                                ask.answerable,
                                f"{ask.label}/{question_id}",
                                hit.legs,
                                hit.explain.vector_raw,
                                hit.explain.text_raw,
                                answers(hit),
                            )
                        )
    return seen, threshold


# -- figures ------------------------------------------------------------------------------------


def _quantiles(values: Sequence[float]) -> str:
    if len(values) < 2:
        return "n<2"
    cuts = statistics.quantiles(values, n=20)  # 5% steps: keep the 5/10/25/50/75/90/95th
    picked = [cuts[0], cuts[1], cuts[4], cuts[9], cuts[14], cuts[17], cuts[18]]
    return " ".join(f"{v:.3f}" for v in picked)


def distributions(seen: Sequence[Seen]) -> list[str]:
    """Cosines of vector-only hits of unanswerable questions, of relevant hits, per half."""
    rows = ["cosine quantiles 5/10/25/50/75/90/95%"]
    for half in ("tuning", "held-out"):
        for vault in ("conversations", "documents", "both"):
            part = [s for s in seen if s.half == half and vault in (s.vault, "both")]
            unanswerable = [s for s in part if not s.answerable]
            lonely = [s.vector_raw for s in unanswerable if s.vector_only and s.vector_raw]
            relevant = [s for s in part if s.relevant]
            relevant_lonely = [s.vector_raw for s in relevant if s.vector_only and s.vector_raw]
            relevant_any = [s.vector_raw for s in relevant if s.vector_raw is not None]
            share = len(lonely) / max(len(unanswerable), 1)
            rows += [
                f"{half} {vault}:",
                f"  unanswerable hits {len(unanswerable)}, vector-only {share:.0%}: "
                f"{_quantiles(lonely)}",
                f"  relevant hits {len(relevant)}, vector-only {len(relevant_lonely)}: "
                f"{_quantiles(relevant_lonely)}",
                f"  relevant hits with a cosine {len(relevant_any)}: {_quantiles(relevant_any)}",
            ]
    return rows


@dataclass(frozen=True)
class Flagging:
    threshold: float
    recall: float  # share of the hits of unanswerable questions flagged
    recall_vector_only: float  # the same among their vector-only hits (what the rule can flag)
    precision: float  # share of flagged hits that answer nothing
    relevant_flagged: float  # share of relevant hits flagged
    # Share of relevant hits below the threshold: flagged, had only the vector leg found them
    # (`--mode vector`, or an answer in other words than the question's).
    relevant_below: float
    answerable_flagged: float  # share of the hits of answerable questions flagged
    silenced: float  # share of unanswerable questions whose every hit is flagged


def flagging(seen: Sequence[Seen], threshold: float) -> Flagging:
    def weak(s: Seen) -> bool:
        return s.vector_only and s.vector_raw is not None and s.vector_raw < threshold

    unanswerable = [s for s in seen if not s.answerable]
    answerable = [s for s in seen if s.answerable]
    relevant = [s for s in seen if s.relevant]
    flagged = [s for s in seen if weak(s)]
    questions: dict[str, bool] = {}
    for s in unanswerable:
        questions[s.question] = questions.get(s.question, True) and weak(s)
    return Flagging(
        threshold,
        sum(map(weak, unanswerable)) / max(len(unanswerable), 1),
        sum(map(weak, unanswerable)) / max(sum(s.vector_only for s in unanswerable), 1),
        sum(not s.relevant for s in flagged) / max(len(flagged), 1),
        sum(map(weak, relevant)) / max(len(relevant), 1),
        sum(s.vector_raw is not None and s.vector_raw < threshold for s in relevant)
        / max(len(relevant), 1),
        sum(map(weak, answerable)) / max(len(answerable), 1),
        sum(questions.values()) / max(len(questions), 1),
    )


def choose(seen: Sequence[Seen], most_relevant_flagged: float) -> Flagging:
    """The highest threshold below which at most `most_relevant_flagged` of the relevant hits
    of the tuning half lie, on conversations and documents alike: in hybrid search a relevant
    hit nearly always holds a word of the question, so how many are flagged says little; how
    many would be, found by meaning alone, is the risk."""
    tuning = [s for s in seen if s.half == "tuning"]
    best = flagging(tuning, GRID[0])
    for threshold in GRID:
        parts = [flagging([s for s in tuning if s.vault == v], threshold) for v in _VAULTS]
        if all(p.relevant_below <= most_relevant_flagged for p in parts):
            best = flagging(tuning, threshold)
    return best


_VAULTS = ("conversations", "documents")


def report(seen: Sequence[Seen], threshold: float) -> list[str]:
    rows = [
        f"threshold {threshold:.2f}: recall (unanswerable hits flagged; of their vector-only "
        "ones), precision (flagged "
        "hits that answer nothing), relevant hits flagged, relevant hits below the threshold, "
        "answerable-question hits flagged, unanswerable questions with every hit flagged"
    ]
    for half in ("tuning", "held-out"):
        for vault in (*_VAULTS, "both"):
            part = [s for s in seen if s.half == half and vault in (s.vault, "both")]
            f = flagging(part, threshold)
            rows.append(
                f"  {half:<8} {vault:<13} recall {f.recall:.3f}; {f.recall_vector_only:.3f} "
                f"precision {f.precision:.3f} "
                f"relevant {f.relevant_flagged:.3f} below {f.relevant_below:.3f} "
                f"answerable {f.answerable_flagged:.3f} "
                f"silenced {f.silenced:.3f}"
            )
    return rows


def load(path: Path) -> list[Seen]:
    rows: list[Mapping[str, object]] = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
    ]
    return [_seen(row) for row in rows]


def _seen(row: Mapping[str, object]) -> Seen:
    """One hit as `--dump` wrote it."""
    legs = row["legs"]
    vector, text = row["vector_raw"], row["text_raw"]
    return Seen(
        half=str(row["half"]),
        vault=str(row["vault"]),
        answerable=bool(row["answerable"]),
        question=str(row["question"]),
        legs=tuple(str(leg) for leg in legs) if isinstance(legs, list) else (),
        vector_raw=float(vector) if isinstance(vector, int | float) else None,
        text_raw=float(text) if isinstance(text, int | float) else None,
        relevant=bool(row["relevant"]),
    )
