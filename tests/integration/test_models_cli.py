"""`apus models list|pull` as a shell runs them, against a model hub on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from apus.embed.local.catalog import DEFAULT_MODEL, load_catalog
from apus.search.rerank.catalog import load_rerankers
from support.fake_hub import FakeHub
from support.vaults import cli_env, run_apus

CATALOG = load_catalog()
SERVED = b"GGUF" + bytes(range(256)) * 400  # not the model: the wrong size, the wrong hash


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    """The default model's file on a local hub, but not its real bytes."""
    manifest = CATALOG[DEFAULT_MODEL]
    with FakeHub() as server:
        server.add(manifest.repo, manifest.revision, manifest.file, SERVED)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def _listed() -> dict[str, dict[str, object]]:
    rows = json.loads(run_apus("models", "list", "--json").stdout)
    return {row["name"]: row for row in rows}


def test_list_shows_the_catalogue_none_installed() -> None:
    listed = _listed()
    rows = {name: row for name, row in listed.items() if row["kind"] == "embedding"}
    assert set(rows) == set(CATALOG)
    rerankers = {name for name, row in listed.items() if row["kind"] == "reranker"}
    assert rerankers == set(load_rerankers())
    assert all(listed[name]["installed"] is False for name in rerankers)
    assert [name for name, row in rows.items() if row["default"]] == [DEFAULT_MODEL]
    for name, row in rows.items():
        manifest = CATALOG[name]
        assert (row["repo"], row["file"], row["size"], row["dims"]) == (
            manifest.repo,
            manifest.file,
            manifest.size,
            manifest.dims,
        )
        assert (row["installed"], row["verified"], row["path"]) == (False, False, None)
    human = run_apus("models", "list").stdout
    assert f"{DEFAULT_MODEL} (default): {CATALOG[DEFAULT_MODEL].dims} dims" in human


def test_pull_downloads_from_the_hub_and_refuses_a_file_that_does_not_verify(
    hub: FakeHub,
) -> None:
    manifest = CATALOG[DEFAULT_MODEL]
    result = run_apus("models", "pull", env=cli_env(), expect=1)  # the default model
    output = result.stdout + result.stderr
    assert f"it has {len(SERVED)} bytes, expected {manifest.size}" in output, output
    assert "Fix:" in output
    # It asked the hub set in HF_ENDPOINT for exactly the catalogue's file and revision.
    paths = {request.path for request in hub.gets()}
    assert paths == {f"/{manifest.repo}/resolve/{manifest.revision}/{manifest.file}"}
    # Nothing unverified counts as installed.
    assert _listed()[DEFAULT_MODEL]["installed"] is False


def test_pull_of_an_unknown_model_names_the_known_ones() -> None:
    result = run_apus("models", "pull", "no-such-model", env=cli_env(), expect=1)
    output = result.stdout + result.stderr
    assert "No model named 'no-such-model' in the catalogue." in output
    known = sorted([*CATALOG, *load_rerankers()])  # embedding models and rerankers alike
    assert f"apus models list  (known: {', '.join(known)})" in output
