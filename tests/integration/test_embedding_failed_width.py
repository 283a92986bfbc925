"""A provider that returns vectors of the wrong width: the embedding fails, and search and
status say so with the fix until it works. Never "being built": nothing is building."""

from __future__ import annotations

from pathlib import Path

import pytest

from apus.memory import Memory
from apus.search.engine import SearchOptions
from support.fake_apis import OpenAIShapedFake
from support.vaults import make_settings, write_note

KEY = "sk-width-test-0123456789abcdef"


def test_a_failed_embedding_is_reported_as_failed_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    vault = tmp_path / "vault"
    write_note(vault, "garden.md", "# Garden\n\nTomatoes and basil grow on the balcony.\n")
    # The fake ignores the requested width and always answers 5-dimensional vectors.
    with OpenAIShapedFake(api_key=KEY, dims=5, dims_field="not-sent") as fake:
        settings = make_settings(
            vault,
            env={"APUS_MEMORY__SEARCH__PROVIDER": "openai"},
            memory__search__outputDimensionality=8,
            memory__search__remote__baseUrl=f"{fake.url}/v1",
        )
        with Memory(settings=settings) as memory:
            report = memory.sync()
            assert report.embedding.state == "failed"
            assert report.embedding.problem is not None
            assert "returned 5-dimensional vectors" in report.embedding.problem.reason
            fix = report.embedding.problem.fix
            assert "outputDimensionality" in fix

        # A later process (as `apus memory search` and `status` are) reads the failure from
        # the index: nobody is embedding, so neither says the vectors are being built.
        with Memory(settings=settings) as memory:
            answer = memory.search("tomatoes", SearchOptions(mode="hybrid"))
            vector = answer.legs["vector"]
            assert not vector.ran
            assert vector.reason.startswith("embedding stopped at 0%: embedding failed (")
            assert "returned 5-dimensional vectors" in vector.reason
            assert vector.fix == fix
            assert "being built" not in vector.reason
            assert [hit.path for hit in answer.hits] == ["garden.md"]  # by keyword meanwhile

            state = memory.embeddings()
            assert state.state == "keyword-only"
            assert state.reason == vector.reason and state.fix == fix
            assert memory.status().as_dict()["embeddings"]["fix"] == fix
