"""The ranking tests' vector leg without a model (tests/support/word_vector_leg.py) answers as
the Searcher expects a vector leg to: nearest first, at most k, within the allowed ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from apus.config import load_settings
from apus.memory import Memory
from support.word_vector_leg import WordVectorLeg, text_vector, word_vector


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    vault.mkdir()
    notes = {
        "router.md": "The router lives in the closet.",
        "garden.md": "Tomatoes and basil on the balcony.",
        "bread.md": "Baked bread, the crumb was open.",
    }
    for name, text in notes.items():
        (vault / name).write_text(text + "\n", encoding="utf-8")
    settings = load_settings(
        environ={"APUS_MEMORY__SEARCH__PROVIDER": "none"}, overrides={"vault": str(vault)}
    )
    with Memory(settings=settings) as memory:
        memory.sync()
    return settings.index_dir()


def test_a_word_has_one_fixed_unit_vector() -> None:
    assert np.array_equal(word_vector("router"), word_vector("router"))
    assert np.linalg.norm(word_vector("router")) == pytest.approx(1.0)
    assert abs(float(word_vector("router") @ word_vector("closet"))) < 0.5
    assert float(text_vector("Router closet") @ text_vector("router, CLOSET!")) == pytest.approx(1)
    assert not text_vector("...").any()


def test_search_gives_the_nearest_k_within_the_allowed(index_dir: Path) -> None:
    leg = WordVectorLeg(index_dir)
    every = leg.search("router closet", 10)
    assert len(every) == 3
    scores = list(every.values())
    assert scores == sorted(scores, reverse=True)
    best = next(iter(every))
    assert list(leg.search("router closet", 1)) == [best]
    others = np.array(sorted(set(every) - {best}), dtype=np.int64)
    assert set(leg.search("router closet", 10, others)) == set(others.tolist())
    assert leg.queries == ["router closet"] * 3


def test_fixed_cosines_place_a_note_whatever_its_words(index_dir: Path) -> None:
    leg = WordVectorLeg(index_dir, cosines={"bread.md": 0.9, "router.md": -0.5})
    found = leg.search("router closet", 10)
    assert sorted(found.values(), reverse=True)[0] == 0.9
    assert min(found.values()) == -0.5


def test_neighbours_of_a_chunk_start_with_itself(index_dir: Path) -> None:
    leg = WordVectorLeg(index_dir)
    best = next(iter(leg.search("router closet", 1)))
    near = leg.neighbours([best], 3)
    assert near[best] == pytest.approx(1.0)
    assert len(near) == 3
