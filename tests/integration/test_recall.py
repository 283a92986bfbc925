"""`apus memory recall` end to end: trusted files only, at most three entries, keyword-only and
with trigger vectors cached at index time (one query embedding, no other model call)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from apus.cli import main
from apus.config import Settings, load_settings
from apus.embed.providers import resolve_provider
from apus.index.store import Store
from apus.index.triggers import trigger_text
from apus.index.vectors import cache_key
from apus.memory import Memory
from apus.search.recall import RecallEntry, recall
from support.recording_server import RecordingServer
from support.tiny_gguf import write_tiny_gguf
from support.vaults import cli_env, local_model_settings, make_settings, run_apus, sync, write_note

# Long enough sections that each becomes its own chunk at 32 tokens a chunk.
FILLER = "Keep this passage short and plain so it reads well in a terminal window today."
MEMORY = f"""---
title: Memory
triggers:
  - deploy the blog
  - renew the certificate
---
# Blog

Deploy the blog with make deploy from the blog folder. {FILLER}

# Certificate

Renew the certificate with certbot renew on the proxy host. {FILLER}
"""
USER = f"""---
triggers:
  - coffee order
  - standing desk height
---
# Coffee

Coffee order: a flat white with oat milk, no sugar. {FILLER}

# Desk

Standing desk height is 108 centimetres, elbows at ninety degrees. {FILLER}
"""
# The same kind of frontmatter outside the trusted files: never recalled.
UNTRUSTED = {
    "daily/2025-01-02.md": "---\ntriggers:\n  - deploy the blog\n  - feed the goldfish\n---\n"
    "Deploy the blog went fine. Feed the goldfish twice.\n",
    "sub/MEMORY.md": "---\ntriggers:\n  - water the ferns\n---\n# Ferns\n\nWater the ferns.\n",
    "notes/plants.md": "---\ntriggers:\n  - water the ferns\n---\n# Plants\n\nFerns.\n",
}
TRUSTED_TRIGGERS = [
    "deploy the blog",
    "renew the certificate",
    "coffee order",
    "standing desk height",
]
CHUNKING = {
    "APUS_MEMORY__SEARCH__CHUNKING__TOKENS": "32",
    "APUS_MEMORY__SEARCH__CHUNKING__OVERLAP": "0",
}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write_note(root, "MEMORY.md", MEMORY)
    write_note(root, "USER.md", USER)
    for rel, text in UNTRUSTED.items():
        write_note(root, rel, text)
    write_note(root, "notes/other.md", "# Other\n\nThe blog and the goldfish, in passing.\n")
    return root


def _keyword_only(vault: Path) -> Path:
    report = sync(make_settings(vault, env=CHUNKING))
    assert report.skipped == []
    return vault


def _recall_json(vault: Path, message: str) -> list[dict[str, Any]]:
    """`apus memory recall --json MESSAGE`, in process, with embeddings off."""
    runner = CliRunner(env={"APUS_MEMORY__SEARCH__PROVIDER": "none", **CHUNKING})
    result = runner.invoke(main, ["--vault", str(vault), "memory", "recall", "--json", message])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["entries"]  # type: ignore[no-any-return]


def _passage(vault: Path, entry: dict[str, Any]) -> str:
    lines = (vault / entry["path"]).read_text(encoding="utf-8").splitlines()
    return "\n".join(lines[entry["start_line"] - 1 : entry["end_line"]])


# -- keyword only (provider none) --------------------------------------------------------


def test_keyword_recall_answers_from_the_trusted_files_only(vault: Path) -> None:
    _keyword_only(vault)
    entries = _recall_json(vault, "how do I deploy the blog?")
    assert [(e["path"], e["trigger"]) for e in entries] == [("MEMORY.md", "deploy the blog")]
    entry = entries[0]
    assert entry["keyword"] == 1.0 and entry["vector"] is None
    assert "make deploy" in entry["snippet"]
    passage = _passage(vault, entry)
    assert "Deploy the blog with make deploy" in passage
    assert "certbot" not in passage  # the blog's own section, not the whole file

    # Triggers of a daily note, a nested MEMORY.md and an ordinary note are never used.
    assert _recall_json(vault, "time to feed the goldfish") == []
    assert _recall_json(vault, "please water the ferns") == []


def test_recall_returns_at_most_three_entries_each_at_its_own_passage(vault: Path) -> None:
    _keyword_only(vault)
    message = "deploy the blog, renew the certificate, coffee order, standing desk height"
    entries = _recall_json(vault, message)
    assert len(entries) == 3
    assert {e["trigger"] for e in entries} < set(TRUSTED_TRIGGERS)
    assert len({(e["path"], e["start_line"]) for e in entries}) == 3
    for entry in entries:
        # Each entry shows the section its own trigger points at.
        assert entry["trigger"].split()[0] in _passage(vault, entry).lower(), entry


def test_an_unrelated_message_recalls_nothing(vault: Path) -> None:
    _keyword_only(vault)
    args = ("--vault", vault, "memory", "recall")
    as_json = run_apus(*args, "--json", "what", "is", "the", "weather", env=cli_env(**CHUNKING))
    assert json.loads(as_json.stdout) == {"entries": []}
    # Part of a trigger is not a strong match: two words of "standing desk height".
    assert _recall_json(vault, "my desk is standing in the corner") == []
    runner = CliRunner(env={"APUS_MEMORY__SEARCH__PROVIDER": "none", **CHUNKING})
    human = runner.invoke(main, ["--vault", str(vault), "memory", "recall", "the weather"])
    assert human.exit_code == 0
    assert human.output == ""


def test_triggers_without_a_body_recall_nothing(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "MEMORY.md", "---\ntriggers:\n  - deploy the blog\n---\n")
    _keyword_only(vault)
    assert _recall_json(vault, "deploy the blog") == []


# -- with vectors ------------------------------------------------------------------------


@pytest.fixture
def tiny_gguf_settings(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    model = write_tiny_gguf(tmp_path / "tiny-embeddinggemma.gguf", name="tiny-embeddinggemma")
    settings = local_model_settings(vault, model, monkeypatch, **CHUNKING)
    yield settings
    embedder = resolve_provider(settings.search).embedder
    assert embedder is not None
    embedder.server.stop()  # type: ignore[attr-defined]


def test_trigger_vectors_are_cached_at_index_time_and_used(tiny_gguf_settings: Settings) -> None:
    settings = tiny_gguf_settings
    report = sync(settings)
    assert report.embedding.state == "done"
    embedder = resolve_provider(settings.search).embedder
    assert embedder is not None
    store = Store(settings.index_dir(), readonly=True)
    try:
        wanted = {
            t: cache_key(embedder.identity, trigger_text(embedder, t)) for t in TRUSTED_TRIGGERS
        }
        cached = store.cached_vectors(list(wanted.values()))
        assert set(cached) == set(wanted.values())
        untrusted = cache_key(embedder.identity, trigger_text(embedder, "water the ferns"))
        assert store.cached_vectors([untrusted]) == {}
    finally:
        store.close()

    entries = recall_entries(settings, "please deploy the blog")
    assert entries
    assert (entries[0].path, entries[0].trigger) == ("MEMORY.md", "deploy the blog")
    assert entries[0].vector is not None
    assert entries[0].keyword == 1.0
    assert all(e.path in ("MEMORY.md", "USER.md") for e in entries)
    # Whatever the (meaningless) tiny vectors say, a daily note's trigger is never recalled.
    goldfish = recall_entries(settings, "feed the goldfish")
    assert all(e.path in ("MEMORY.md", "USER.md") for e in goldfish)
    assert "feed the goldfish" not in {e.trigger for e in goldfish}


@pytest.fixture
def remote(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Settings, RecordingServer]]:
    with RecordingServer(dims=16) as server:
        monkeypatch.setenv("APUS_VAULT", str(vault))
        monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "openai-compatible")
        monkeypatch.setenv("APUS_MEMORY__SEARCH__MODEL", "embeddinggemma-300m")
        monkeypatch.setenv("APUS_MEMORY__SEARCH__REMOTE__BASEURL", server.url)
        for key, value in CHUNKING.items():
            monkeypatch.setenv(key, value)
        settings = load_settings()
        sync(settings)
        sent = server.inputs()
        for trigger in TRUSTED_TRIGGERS:
            assert f"title: none | text: {trigger}" in sent
        yield settings, server


def test_recall_embeds_only_the_message(remote: tuple[Settings, RecordingServer]) -> None:
    settings, server = remote
    embedder = resolve_provider(settings.search).embedder  # fresh: it knows no width yet
    assert embedder is not None
    before = len(server.inputs())
    store = Store(settings.index_dir(), readonly=True)
    try:
        entries = recall(store, "please deploy the blog", embedder=embedder)
    finally:
        store.close()
        embedder.close()
    assert server.inputs()[before:] == ["task: search result | query: please deploy the blog"]
    assert entries and entries[0].trigger == "deploy the blog"
    assert entries[0].vector is not None


def test_recall_entries_sends_one_embedding_input(
    remote: tuple[Settings, RecordingServer],
) -> None:
    settings, server = remote
    before = len(server.inputs())
    entries = recall_entries(settings, "please deploy the blog")  # what the command runs
    assert entries and entries[0].trigger == "deploy the blog"
    assert server.inputs()[before:] == ["task: search result | query: please deploy the blog"]


def recall_entries(settings: Settings, message: str) -> list[RecallEntry]:
    """What `apus memory recall` runs: the session's recall."""
    with Memory(settings=settings) as memory:
        return memory.recall(message)
