"""Scores that read in order: on generated vaults and queries, the score of every answer
(the session's, an agent's after `perNote`, its text lines) never rises down the list, by
words alone and by meaning and words together, with diversity on or off."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apus.agents.tools import AgentTools
from apus.config import Settings
from apus.memory import Memory
from apus.search.options import SearchOptions
from apus.search.per_note import limit_per_note
from support.vaults import make_settings, write_note

WORDS = ["router", "backup", "vpn", "garden", "kiln", "tea", "deploy", "blog", "kayak", "pump"]
# Small chunks, so that one note holds several passages (MMR and a note's best first meet).
SMALL_CHUNKS = {"memory__search__chunking__tokens": 32, "memory__search__chunking__overlap": 0}

words = st.sampled_from(WORDS)
paragraphs = st.lists(words, min_size=2, max_size=30).map(" ".join)
names = st.one_of(
    st.tuples(words, words).map(lambda pair: f"notes/{pair[0]}-{pair[1]}.md"),
    st.tuples(words, st.integers(1, 28)).map(lambda p: f"{p[0]}/2025-06-{p[1]:02}.md"),
    st.sampled_from(["MEMORY.md", "USER.md", f"memory/{WORDS[0]}.md"]),
)


@st.composite
def notes(draw: st.DrawFn) -> str:
    """A note: maybe an importance in frontmatter, paragraphs, maybe an annotated entry."""
    text = ""
    if draw(st.booleans()):
        text += f"---\nimportance: {draw(st.integers(1, 10))}\n---\n"
    text += f"# {draw(words)}\n\n" + "\n\n".join(draw(st.lists(paragraphs, min_size=1, max_size=5)))
    if draw(st.booleans()):
        text += f"\n\n## Entry\n<!-- importance: {draw(st.integers(1, 10))} -->\n{draw(paragraphs)}"
    return text + "\n"


vaults = st.dictionaries(names, notes(), min_size=1, max_size=10)
queries = st.one_of(
    st.lists(words, min_size=1, max_size=3).map(" ".join),
    names.map(lambda name: Path(name).stem),  # a note's name: it is put first
)


def _never_rises(scores: Sequence[float], what: str) -> None:
    for upper, lower in pairwise(scores):
        assert lower <= upper, f"{what}: {list(scores)}"


def _rewrite(vault: Path, notes_by_path: dict[str, str]) -> None:
    if vault.exists():
        shutil.rmtree(vault)
    vault.mkdir(parents=True)
    for rel, text in notes_by_path.items():
        write_note(vault, rel, text)


def _check_every_face(memory: Memory, tools: AgentTools, query: str) -> None:
    for mmr in (True, False):
        for limit in (3, 50):
            options = SearchOptions(limit=limit, mmr=mmr, min_score=0.0)
            hits = memory.search(query, options).hits
            _never_rises([h.score for h in hits], f"search {query!r} mmr={mmr}")
            for per_note in (1, 2):
                kept = limit_per_note(hits, per_note)
                _never_rises([h.score for h in kept], f"perNote {per_note} {query!r}")
    for per_note in (1, 2, 5):
        result = tools.memory_search(query=query, maxResults=20, perNote=per_note, minScore=0.0)
        answer = result.structured_content or {}
        _never_rises([p["score"] for p in answer["results"]], f"memory_search {query!r}")
        text = "".join(getattr(block, "text", "") for block in result.content)
        shown = [float(m) for m in re.findall(r"#L\d+-L\d+  ([0-9.e-]+)  ", text)]
        assert len(shown) == len(answer["results"])
        _never_rises(shown, f"memory_search text {query!r}")


def _property(memory: Memory, vault: Path, max_examples: int) -> None:
    tools = AgentTools(memory)

    @settings(
        max_examples=max_examples,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(vaults, st.lists(queries, min_size=1, max_size=4))
    def check(notes_by_path: dict[str, str], asked: list[str]) -> None:
        _rewrite(vault, notes_by_path)
        memory.sync()
        for query in asked:
            _check_every_face(memory, tools, query)

    check()


def test_scores_never_rise_by_words(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    with Memory(settings=make_settings(vault, **SMALL_CHUNKS)) as memory:
        _property(memory, vault, max_examples=40)


@pytest.mark.slow
@pytest.mark.usefixtures("isolated_dirs")
def test_scores_never_rise_by_meaning_and_words(tmp_path: Path, tiny_model: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    env = {
        **os.environ,
        "APUS_MEMORY__SEARCH__PROVIDER": "local",
        "APUS_MEMORY__SEARCH__LOCAL__MODELPATH": str(tiny_model),
        "APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE": "512",
    }
    hybrid: Settings = make_settings(vault, env=env, **SMALL_CHUNKS)
    with Memory(settings=hybrid) as memory:
        _property(memory, vault, max_examples=15)
        assert memory.search("router backup").ran == "hybrid"
