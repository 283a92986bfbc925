"""The core stays headless: no domain module pulls in Textual, and nothing in it prints."""

from __future__ import annotations

import ast
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import apus

PACKAGE_DIR = Path(apus.__file__).parent
UI_PACKAGES = ("apus.tui",)
# Modules allowed to write to the terminal: the command line and the app.
PRINTING_ALLOWED = ("apus.cli", "apus.tui")


def domain_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="apus."):
        if info.name.startswith(UI_PACKAGES) or info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


def test_domain_modules_exist() -> None:
    names = domain_modules()
    assert "apus.memory.session" in names and "apus.search.engine" in names
    assert "apus.indexing.sync" in names


def test_no_domain_module_imports_textual() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {domain_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "", f"textual imported by the core: {done.stdout}"


def test_only_the_cli_and_the_app_print() -> None:
    offenders = []
    for path in PACKAGE_DIR.rglob("*.py"):
        module = "apus." + ".".join(path.relative_to(PACKAGE_DIR).with_suffix("").parts)
        if module.startswith(PRINTING_ALLOWED):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                offenders.append(f"{module}:{node.lineno}")
    assert offenders == []


# What a keyword-only search never needs: the app, the agent server, vectors, the model
# hub, HTTP clients, the index's writers and the config writer. Each is seconds or tenths of
# a second of start-up for a shell user or an agent calling `apus memory search`.
NOT_FOR_A_KEYWORD_SEARCH = (
    "textual",
    "mcp",
    "faiss",
    "huggingface_hub",
    "httpx",
    "llama_cpp",
    "tomlkit",
    "apus.indexing.sync",
    "apus.embed.local.embedder",
    # The live session's watcher, frontmatter parsing, status, transcript
    # tables and the other commands' modules: each is loaded only where it is used.
    "watchfiles",
    "yaml",
    "dateparser",
    "apus.index.status",
    "apus.index.transcript_store",
    "apus.cli.agents",
    "apus.cli.bench",
    "apus.cli.doctor",
    "apus.cli.evaluate",
    "apus.cli.models",
    "apus.cli.sessions",
    # Search by meaning (the providers, the vector leg, FAISS's file, the identity of the
    # vectors), the media of extraPaths, scanning, chunking and transcripts: loaded when a
    # search runs the vector leg, meets a media hit or reads a note or a transcript.
    "apus.embed.base",
    "apus.embed.providers",
    "apus.search.vector_leg",
    "apus.index.vectors",
    "apus.index.identity",
    "apus.index.media",
    "apus.index.last_sync",
    "apus.vault.scan",
    "apus.vault.chunk",
    "apus.vault.markdown",
    "apus.vault.transcripts",
    "apus.search.per_note",
    "apus.memory.note_reader",
    # The second stage's model runtime, tokenizer, services and catalogue: loaded by a
    # search that reranks.
    "onnxruntime",
    "tokenizers",
    "apus.search.rerank.local",
    "apus.search.rerank.remote",
    "apus.search.rerank.catalog",
    # Settings are frozen dataclasses checked by `apus.config_model`: pydantic (and the
    # package metadata its plugin loader reads) is the agent server's alone.
    "pydantic",
    "pydantic_core",
    "importlib.metadata",
)


def _search_in_process(tmp_path: Path, provider: str, report: str) -> str:
    """`apus memory search tar --mode keyword --json` over a one-note vault, in a fresh
    interpreter, then `report` (Python printing one line): that line."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "tar.md").write_text("# Tar\n\nExtract an archive with tar.\n", encoding="utf-8")
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "APUS_MEMORY__SEARCH__PROVIDER": provider,
    }
    env.pop("OPENBLAS_NUM_THREADS", None)
    index = [sys.executable, "-m", "apus", "--vault", str(vault), "memory", "index", "--json"]
    subprocess.run(index, env=env, capture_output=True, check=True, timeout=120)
    search = ["--vault", str(vault), "memory", "search", "tar", "--mode", "keyword", "--json"]
    code = (
        "import sys\n"
        "from apus.cli import main\n"
        "try:\n"
        f"    main({search!r})\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        f"{report}\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "tar.md" in done.stdout  # it did search
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("provider", ["none", "auto"])
def test_a_keyword_search_loads_only_what_it_uses(tmp_path: Path, provider: str) -> None:
    report = (
        f"loaded = [m for m in {NOT_FOR_A_KEYWORD_SEARCH!r} if m in sys.modules]\n"
        "print('LOADED', ','.join(loaded))"
    )
    assert _search_in_process(tmp_path, provider, report) == "LOADED"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_a_keyword_search_starts_no_thread(tmp_path: Path) -> None:
    # numpy is loaded with one OpenBLAS thread (no spinning helpers on each core), and the
    # variable that asked for it is put back for whatever the process starts later.
    report = (
        "import os\n"
        "print('THREADS', len(os.listdir('/proc/self/task')), "
        "os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    assert _search_in_process(tmp_path, "none", report) == "THREADS 1 None"


def test_the_engine_knows_a_note_by_the_scanners_suffixes() -> None:
    # The engine keeps its own copy so that a search need not import the scanner.
    from apus.search.engine import NOTE_SUFFIXES
    from apus.vault.scan import NOTE_SUFFIXES as SCANNED

    assert NOTE_SUFFIXES == SCANNED
