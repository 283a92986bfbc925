"""A search answer from a partial vector set says so, in its field and in its text."""

from __future__ import annotations

from apus.agents.answers import SearchAnswer
from apus.agents.compact import render_text


def test_a_partial_vector_set_is_named_in_the_text_answer() -> None:
    answer = SearchAnswer(results=[], mode="hybrid", coverage=0.12)
    assert "Still embedding: meaning search covers 12% of passages" in render_text(answer)
    assert "Still embedding" not in render_text(SearchAnswer(results=[], mode="hybrid"))
