"""The rerank stage in a real search: a real (tiny) cross-encoder built by the test, run by
onnxruntime over a real index; the catalogue model pulled from a hub on 127.0.0.1; the fused
order kept, and said so, whenever the stage cannot run."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from apus.cli import main
from apus.config import Settings
from apus.search.rerank import catalog
from support.fake_hub import TEST_REVISION, FakeHub
from support.tiny_cross_encoder import build
from support.vaults import (
    cli_env,
    index_vault,
    make_settings,
    run_apus,
    search_response,
    sync,
    write_note,
)

QUERY = "harbour beacon"
# Keyword search ranks `gravel.md` first (both words, twice); the tiny model shuns its
# "gravel shed" and favours the lighthouse keeper of `keeper.md`.
NOTES = {
    "gravel.md": "# Gravel\n\nharbour beacon harbour beacon notes about the gravel shed\n",
    "keeper.md": "# Keeper\n\nthe harbour and the lighthouse keeper of the granite island\n",
    "path.md": "# Path\n\nthe beacon on the coast path\n",
}


@pytest.fixture(scope="module")
def tiny_reranker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("tiny-reranker"))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    for name, text in NOTES.items():
        write_note(root, name, text)
    return root


def _settings(vault: Path, **flags: object) -> Settings:
    settings = make_settings(vault, memory__search__rerank__enabled=True, **flags)
    sync(settings)
    return settings


def _paths(settings: Settings, **options: object) -> list[str]:
    return [hit.path for hit in search_response(settings, QUERY, mode="keyword", **options).hits]


def test_the_model_reorders_the_top_candidates_and_each_hit_carries_its_score(
    vault: Path, tiny_reranker: Path
) -> None:
    settings = _settings(vault, memory__search__rerank__local__modelPath=str(tiny_reranker))
    fused = search_response(settings, QUERY, mode="keyword", rerank=False)
    reranked = search_response(settings, QUERY, mode="keyword")
    assert next(h.path for h in fused.hits) == "gravel.md"
    assert "rerank" not in fused.legs
    assert next(h.path for h in reranked.hits) == "keeper.md"
    assert {h.path for h in reranked.hits} == set(NOTES)
    leg = reranked.legs["rerank"]
    assert (leg.ran, leg.candidates, leg.reason) == (True, 3, "")
    by_path = {hit.path: hit for hit in reranked.hits}
    for hit in fused.hits:
        # The fused relevance (what minScore judges) is the same; the model's score and
        # the blend that orders the hits are beside it.
        assert by_path[hit.path].explain.merged == hit.explain.merged
    keeper, gravel = by_path["keeper.md"].explain, by_path["gravel.md"].explain
    assert keeper.rerank is not None and gravel.rerank is not None
    assert keeper.rerank > 0 > gravel.rerank
    assert keeper.reranked is not None and gravel.reranked is not None
    assert keeper.reranked > keeper.merged and gravel.reranked < gravel.merged
    # Scores read in the order shown.
    scores = [hit.score for hit in reranked.hits]
    assert scores == sorted(scores, reverse=True)


def test_only_the_first_candidates_are_read_and_the_threshold_still_decides_what_is_shown(
    vault: Path, tiny_reranker: Path
) -> None:
    settings = _settings(
        vault,
        memory__search__rerank__local__modelPath=str(tiny_reranker),
        memory__search__rerank__candidates=2,
    )
    options = {"mode": "keyword", "min_score": 0.9, "mmr": False}
    fused = search_response(settings, QUERY, rerank=False, **options)
    reranked = search_response(settings, QUERY, **options)
    # The same passages pass the threshold (keyword matches fill the free places) with or
    # without the model: it orders what minScore admits, it never hides any of it.
    assert {h.path for h in reranked.hits} == {h.path for h in fused.hits}
    assert reranked.legs["rerank"].candidates == 2
    unread = [hit for hit in reranked.hits if hit.explain.rerank is None]
    assert [hit.path for hit in unread] == [fused.hits[2].path]  # the third fused candidate


def test_a_model_not_downloaded_leaves_the_fused_order_and_says_how_to_get_it(
    vault: Path,
) -> None:
    settings = _settings(vault)  # the catalogue's model, never pulled here
    leg = search_response(settings, QUERY, mode="keyword").legs["rerank"]
    assert not leg.ran
    assert leg.reason == "the reranking model ms-marco-minilm-l12-v2 is not downloaded yet"
    assert leg.fix == "apus models pull ms-marco-minilm-l12-v2"
    assert _paths(settings) == _paths(settings, rerank=False)


@pytest.mark.parametrize("broken", ["not-onnx", "two-outputs"])
def test_a_file_that_is_no_cross_encoder_is_reported_with_the_setting_to_change(
    vault: Path, tmp_path: Path, broken: str
) -> None:
    if broken == "not-onnx":
        model = build(tmp_path / "model")
        model.write_bytes(b"not a model at all")
        expected = "is not a usable ONNX model"
    else:
        model = build(tmp_path / "model", bad_output=True)
        expected = "answered shape (3, 2) for 3 pairs"
    settings = _settings(vault, memory__search__rerank__local__modelPath=str(model))
    leg = search_response(settings, QUERY, mode="keyword").legs["rerank"]
    assert not leg.ran and expected in leg.reason, leg.reason
    assert "memory.search.rerank.local.modelPath" in leg.fix
    assert _paths(settings) == _paths(settings, rerank=False)


@pytest.fixture
def catalogue(
    tmp_path: Path, tiny_reranker: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeHub]:
    """A catalogue of one reranker, `tiny-reranker`, whose two files a hub on 127.0.0.1
    serves."""
    model = tiny_reranker.read_bytes()
    tokenizer = tiny_reranker.with_name("tokenizer.json").read_bytes()
    folder = tmp_path / "rerankers"
    folder.mkdir()
    (folder / "tiny.toml").write_text(
        f"""name = "tiny-reranker"
repo = "apus-tests/tiny-reranker"
revision = "{TEST_REVISION}"
description = "a test cross-encoder"
max_tokens = 64

[model]
file = "onnx/model.onnx"
size = {len(model)}
sha256 = "{hashlib.sha256(model).hexdigest()}"

[tokenizer]
file = "tokenizer.json"
size = {len(tokenizer)}
sha256 = "{hashlib.sha256(tokenizer).hexdigest()}"
""",
        encoding="utf-8",
    )
    monkeypatch.setattr(catalog, "rerankers_dir", lambda: folder)
    with FakeHub() as hub:
        hub.add("apus-tests/tiny-reranker", TEST_REVISION, "onnx/model.onnx", model)
        hub.add("apus-tests/tiny-reranker", TEST_REVISION, "tokenizer.json", tokenizer)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        yield hub


def test_models_pull_downloads_and_verifies_a_reranker_that_search_then_uses(
    vault: Path, catalogue: FakeHub
) -> None:
    listed = CliRunner().invoke(main, ["models", "list"])
    assert "tiny-reranker: reranker" in listed.output and "verified" not in listed.output
    pulled = CliRunner().invoke(main, ["models", "pull", "tiny-reranker"])
    assert pulled.exit_code == 0, pulled.output
    assert "Verified tiny-reranker" in pulled.output
    got = sorted(request.path for request in catalogue.gets())
    assert got == [
        f"/apus-tests/tiny-reranker/resolve/{TEST_REVISION}/onnx/model.onnx",
        f"/apus-tests/tiny-reranker/resolve/{TEST_REVISION}/tokenizer.json",
    ]
    assert (
        "tiny-reranker: reranker, 0 MB  ✓ verified"
        in CliRunner().invoke(main, ["models", "list"]).output
    )
    settings = _settings(vault, memory__search__rerank__model="tiny-reranker")
    response = search_response(settings, QUERY, mode="keyword")
    assert response.legs["rerank"].ran
    assert next(hit.path for hit in response.hits) == "keeper.md"


def test_a_download_that_does_not_verify_is_refused(vault: Path, catalogue: FakeHub) -> None:
    catalogue.corrupt = True
    pulled = CliRunner().invoke(main, ["models", "pull", "tiny-reranker"])
    assert pulled.exit_code == 1
    assert "failed verification" in pulled.output and "sha256" in pulled.output
    assert "Fix: apus models pull tiny-reranker" in pulled.output
    settings = _settings(vault, memory__search__rerank__model="tiny-reranker")
    leg = search_response(settings, QUERY, mode="keyword").legs["rerank"]
    assert (leg.ran, leg.fix) == (False, "apus models pull tiny-reranker")


def _ranked_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line[:3].strip().rstrip(".").isdigit()]


def test_the_command_line_explains_the_rerank_score_and_says_when_it_did_not_run(
    vault: Path, tiny_reranker: Path
) -> None:
    env = cli_env(APUS_MEMORY__SEARCH__RERANK__LOCAL__MODELPATH=str(tiny_reranker))
    index_vault(vault, env)
    search = ("--vault", vault, "memory", "search", QUERY, "--mode", "keyword")
    shown = run_apus(*search, "--rerank", "--explain", env=env)
    assert "keeper.md" in _ranked_lines(shown.stdout)[0]
    assert "→ reranked" in shown.stdout and "(model -11.30)" in shown.stdout  # gravel.md
    missing = cli_env(APUS_MEMORY__SEARCH__RERANK__ENABLED="true")
    plain = run_apus(*search, env=missing).stdout
    assert "reranking did not run: the reranking model ms-marco-minilm-l12-v2 is not" in plain
    assert "gravel.md" in _ranked_lines(plain)[0]  # the fused order
    off = run_apus(*search, "--no-rerank", env=missing)
    assert "reranking" not in off.stdout
