"""TUI test fixtures: keyword-only by default, a private HOME, a small indexed vault."""

from __future__ import annotations

from pathlib import Path

import pytest

from .factory import index_for_app, write_vault


@pytest.fixture(autouse=True)
def keyword_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Embeddings off, recency off (results must not drift with the calendar), HOME private."""
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "none")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__QUERY__HYBRID__TEMPORAL_DECAY__ENABLED", "false")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    return tmp_path / "home" / "config.toml"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "home" / "notes")


@pytest.fixture
def indexed_vault(vault: Path, config_file: Path) -> Path:
    index_for_app(vault, config_file)
    return vault
