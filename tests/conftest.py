"""Shared fixtures: every test runs with its own config/data/cache dirs, never the user's."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from apus.embed import base as embed_base
from support.ports import refusing_port
from support.tiny_gguf import write_tiny_gguf
from support.tmpfs import mounted_tmpfs

# Hypothesis fails an example that takes over 200 ms by default: a wall-clock limit, which a
# loaded machine can meet with any example. Property tests check results, never speed.
settings.register_profile("apus", deadline=None)
settings.load_profile("apus")

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_VAULT = REPO_ROOT / "assets" / "sample-vault"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (make test): two workers per core. A test waits on the processes it starts
    (the CLI, servers, llama.cpp) a third of its time (the whole suite on one worker kept
    0.62 of a core busy), so one worker per core leaves each core idle that third."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 * (cores or 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first: the packaged binaries' group (one worker builds and runs them),
    then the others marked `slow`, each kept in its order. On parallel workers a long test
    handed out last keeps the whole run waiting for it alone; handed out first, the short
    ones fill the other workers around it."""
    items.sort(
        key=lambda item: (
            item.get_closest_marker("xdist_group") is None,
            item.get_closest_marker("slow") is None,
        )
    )


@pytest.fixture(scope="session")
def refusing_hub() -> Iterator[str]:
    """A model hub address that refuses every connection, for the whole run."""
    with refusing_port() as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(autouse=True)
def isolated_dirs(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    refusing_hub: str,
) -> Path:
    """Point platformdirs (through XDG_*) at a private folder and drop APUS_* from the env."""
    home = tmp_path_factory.mktemp("home")
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        path = home / name.lower()
        path.mkdir()
        monkeypatch.setenv(name, str(path))
    runtime = home / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    for name in list(os.environ):
        if name.startswith("APUS_") or name.startswith("HF_"):
            monkeypatch.delenv(name, raising=False)
    # The agent clients' own folders, whose transcripts are read by default: never the
    # developer's (a test that wants some writes them here).
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / "codex"))
    # No test downloads from the real hub by accident: a download goes to the test's fake
    # hub (it sets HF_ENDPOINT) or is refused at once; huggingface_hub itself stays offline.
    monkeypatch.setenv("HF_ENDPOINT", refusing_hub)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    return home


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real 2-layer BERT GGUF whose name makes family detection pick EmbeddingGemma (one
    file for the whole run: no test writes to it)."""
    folder = tmp_path_factory.mktemp("tiny-model")
    return write_tiny_gguf(folder / "tiny-embeddinggemma.gguf", name="tiny-embeddinggemma")


@pytest.fixture
def sample_vault(tmp_path: Path) -> Path:
    """A private copy of the bundled sample vault (tests may change it)."""
    target = tmp_path / "sample-vault"
    shutil.copytree(SAMPLE_VAULT, target)
    return target


@pytest.fixture(autouse=True)
def no_registered_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no secrets registered for redaction (the set is process-wide):
    a redaction test must hide a key because its own code registered it, not an earlier
    test."""
    monkeypatch.setattr(embed_base, "_registered_secrets", set())


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs (mounting needs root); unmounted afterwards."""
    with mounted_tmpfs(tmp_path, "16m") as mount_point:
        yield mount_point
