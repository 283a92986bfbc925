"""Weak hits on real searches: passages only the vector leg found, below the cosine measured for
the model's family, are weak; a keyword or path match never is, nor any hit of a model with no
measured threshold. Through the CLI (`--json` and the text) as well."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from apus.config import Settings
from apus.memory import Memory
from apus.search.engine import SearchHit, SearchOptions
from apus.search.weak import is_weak, threshold_for, weak_chunks, weak_threshold
from support.vaults import cli_env, local_model_settings, run_apus, sync, write_note
from support.weak_vault import MINILM_FILE, NOTES, NOTHING_SAID, spread_model


@pytest.fixture
def minilm_vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(vault, rel, text)
    model = spread_model(tmp_path / "model", MINILM_FILE)
    settings = local_model_settings(vault, model, monkeypatch)
    assert sync(settings).embedding.state == "done"
    yield settings
    with Memory(settings=settings) as memory:
        embedder = memory.provider.embedder
        assert embedder is not None
        embedder.server.stop()  # type: ignore[attr-defined]


def _search(settings: Settings, query: str) -> tuple[list[SearchHit], float | None, frozenset[int]]:
    """The hits, the threshold the session's model gets, and the weak ones among the hits."""
    with Memory(settings=settings) as memory:
        hits = memory.search(query, SearchOptions(min_score=0.0)).hits
        embedder = memory.provider.embedder
        return hits, threshold_for(embedder), weak_chunks(hits, embedder)


def test_the_shipped_threshold_is_read_from_the_model_family() -> None:
    minilm = weak_threshold("none@1", "all-MiniLM-L6-v2-Q8_0.gguf")
    gemma = weak_threshold("embeddinggemma@1", "embeddinggemma-300m-qat-Q8_0.gguf")
    assert minilm == 0.20
    assert weak_threshold("none", "all-minilm-l6-v2-tiny.gguf") == minilm  # any file of it
    assert gemma == 0.37  # the family's, whatever the file or quantisation
    assert weak_threshold("embeddinggemma", "embeddinggemma-300m-Q4_0.gguf") == gemma
    # Unmeasured: another model without a family, MiniLM under a forced prefix scheme.
    assert weak_threshold("none@1", "bge-small-en-v1.5.gguf") is None
    assert weak_threshold("e5@1", "all-MiniLM-L6-v2-Q8_0.gguf") is None
    assert weak_threshold("nomic@1", "nomic-embed-text-v1.5.gguf") is None


def test_vector_only_hits_below_the_threshold_are_weak(minilm_vault: Settings) -> None:
    hits, threshold, weak = _search(minilm_vault, NOTHING_SAID)
    assert threshold is not None
    assert threshold == weak_threshold("none@1", MINILM_FILE)  # the shipped one
    assert hits and all(hit.legs == ("vector",) for hit in hits)
    cosines = [hit.explain.vector_raw for hit in hits]
    for hit in hits:
        cosine = hit.explain.vector_raw
        assert cosine is not None
        assert is_weak(hit, threshold) == (cosine < threshold)
        assert (hit.chunk_id in weak) == (cosine < threshold)
    assert weak, cosines  # the test vault holds a weak hit


def test_a_keyword_match_is_never_weak(minilm_vault: Settings) -> None:
    hits, threshold, weak = _search(minilm_vault, f"garden {NOTHING_SAID}")
    assert threshold is not None
    matched = [hit for hit in hits if "keyword" in hit.legs]
    assert [hit.path for hit in matched] == ["garden.md"]
    assert matched[0].chunk_id not in weak
    assert not is_weak(matched[0], 1.0)  # whatever its cosine


def test_a_model_without_a_measured_threshold_flags_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        write_note(vault, rel, text)
    model = spread_model(tmp_path / "model", "tiny-bert.gguf")  # family "none", not MiniLM
    settings = local_model_settings(vault, model, monkeypatch)
    assert sync(settings).embedding.state == "done"
    try:
        hits, threshold, weak = _search(settings, NOTHING_SAID)
        assert hits and all(hit.legs == ("vector",) for hit in hits)
        assert threshold is None and weak == frozenset()
    finally:
        with Memory(settings=settings) as memory:
            embedder = memory.provider.embedder
            assert embedder is not None
            embedder.server.stop()  # type: ignore[attr-defined]


def test_the_cli_marks_weak_hits(minilm_vault: Settings) -> None:
    hits, _threshold, weak = _search(minilm_vault, NOTHING_SAID)
    expected = {hit.citation for hit in hits if hit.chunk_id in weak}
    # Every hit shown, as `_search` asks: the weak one is also the least relevant.
    env = cli_env(APUS_MEMORY__SEARCH__PROVIDER="local", APUS_MEMORY__SEARCH__QUERY__MINSCORE="0")
    assert env["APUS_MEMORY__SEARCH__LOCAL__MODELPATH"].endswith(MINILM_FILE)
    data = json.loads(run_apus("memory", "search", "--json", NOTHING_SAID, env=env).stdout)
    results = data["results"]
    assert results and all(isinstance(hit["weak"], bool) for hit in results)
    flagged = {hit["citation"] for hit in results if hit["weak"]}
    assert flagged and flagged == expected
    text = run_apus("memory", "search", NOTHING_SAID, env=env).stdout
    for hit in results:
        header = next(line for line in text.splitlines() if hit["path"] in line)
        assert header.rstrip().endswith("(weak)") == hit["weak"]
