"""The packaged binaries: build them with PyInstaller, then use them as a user without Python.

One PyInstaller run (packaging/build.py) makes both the one-folder and the one-file binary.
Each then runs with an environment that has no virtualenv, no PYTHONPATH and private XDG
folders: `--version`, keyword-only index and search on the sample vault, and the same with a
tiny GGUF model, whose embedding server the binary must start from itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from apus import __version__

# One worker runs them all: the binaries are built once, for the module.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600), pytest.mark.xdist_group("binaries")]

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "packaging" / "build.py"
SAMPLE_VAULT = REPO_ROOT / "assets" / "sample-vault"
# Generous: two slow cores, shared with other work, and a one-file binary unpacks itself
# (about 180 MB) on every start.
BUILD_TIMEOUT_S = 2400
RUN_TIMEOUT_S = 300
SETTLE_TIMEOUT_S = 120


@dataclass(frozen=True)
class Binaries:
    onedir: Path
    onefile: Path


@dataclass(frozen=True)
class Sandbox:
    """A private home for one test: XDG folders, TMPDIR and a copy of the sample vault."""

    root: Path
    vault: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def binaries(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[Binaries]:
    """Both binaries, built once for the module by the real build script."""
    dist = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--onedir", "--onefile", "--dist", str(dist)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    seconds = time.monotonic() - started
    assert result.returncode == 0, f"build failed:\n{result.stdout}\n{result.stderr[-20000:]}"
    onedir = dist / "apus" / "apus"
    onefiles = sorted(dist.glob("apus-*"))
    assert onedir.is_file(), f"no one-folder binary in {sorted(dist.rglob('*'))[:20]}"
    assert len(onefiles) == 1, f"expected one one-file binary, found {onefiles}"
    _report(
        pytestconfig,
        f"packaged binaries built in {seconds:.0f}s: one-folder "
        f"{_tree_mb(onedir.parent):.0f} MB, one-file {_tree_mb(onefiles[0]):.0f} MB",
    )
    yield Binaries(onedir=onedir, onefile=onefiles[0])
    shutil.rmtree(dist, ignore_errors=True)  # about 250 MB; pytest keeps old tmp folders


@pytest.fixture(params=["onedir", "onefile"])
def binary(request: pytest.FixtureRequest, binaries: Binaries) -> Path:
    path: Path = getattr(binaries, request.param)
    return path


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    """A clean environment; afterwards, nothing it started may still run or be left unpacked."""
    root = tmp_path / "home"
    env = {
        "HOME": str(root),
        "PATH": _path_without_python_env(),
        "LANG": "C.UTF-8",
        "TMPDIR": str(root / "tmp"),
        "HF_HUB_OFFLINE": "1",
    }
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        env[name] = str(root / name.lower())
    env["XDG_RUNTIME_DIR"] = str(root / "runtime")
    for folder in ("tmp", "runtime"):
        (root / folder).mkdir(parents=True, mode=0o700)
    vault = root / "sample-vault"
    shutil.copytree(SAMPLE_VAULT, vault)
    _assert_no_python_with_apus(env)
    yield Sandbox(root=root, vault=vault, env=env)
    leftovers = _wait_for_processes_mentioning(root)
    for pid in leftovers:  # never leave a stray server behind, even when the test fails
        _kill(pid)
    assert not leftovers, f"processes outlived the test: {leftovers}"
    # A one-file binary unpacks into TMPDIR and must remove that folder when it exits.
    assert sorted(p.name for p in (root / "tmp").iterdir()) == []
    state_files = sorted((root / "runtime").glob("apus/embed-server-*.json"))
    assert state_files == [], "a stopped embedding server left its state file behind"


def test_version(binary: Path, sandbox: Sandbox) -> None:
    result = _run(binary, "--version", env=sandbox.env)
    assert result.stdout == f"apus, version {__version__}\n"


def test_keyword_only_index_and_search(binary: Path, sandbox: Sandbox) -> None:
    env = {**sandbox.env, "APUS_MEMORY__SEARCH__PROVIDER": "none"}
    report = _run_json(binary, "--vault", sandbox.vault, "memory", "index", "--json", env=env)
    assert report["files"] == len(list(sandbox.vault.rglob("*.md")))
    assert report["chunks"] >= report["files"]
    assert report["embedded"] == 0

    found = _run_json(
        binary, "--vault", sandbox.vault, "memory", "search", "sourdough", "--json", env=env
    )
    assert found["legs"]["keyword"]["ran"] is True
    assert found["legs"]["vector"]["ran"] is False
    # A query that is a note's file stem puts that note on top.
    assert found["results"][0]["path"] == "notes/sourdough.md"


def test_connect_writes_the_binarys_own_path(binary: Path, sandbox: Sandbox) -> None:
    """A client starts the binary itself (a one-file binary: the file, not its unpack folder),
    and the hook it installs answers from it."""
    env = {**sandbox.env, "APUS_MEMORY__SEARCH__PROVIDER": "none"}
    _run(binary, "--vault", sandbox.vault, "memory", "index", env=env)
    _run(binary, "--vault", sandbox.vault, "connect", "codex", env=env)
    codex = tomllib.loads((sandbox.root / ".codex" / "config.toml").read_text(encoding="utf-8"))
    assert codex["mcp_servers"]["apus"] == {
        "command": str(binary),
        "args": ["--vault", str(sandbox.vault), "mcp"],
    }
    _run(binary, "--vault", sandbox.vault, "connect", "claude-code", "--hooks", env=env)
    settings = json.loads((sandbox.root / ".claude" / "settings.json").read_text("utf-8"))
    command = settings["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert command == shlex.join(
        [str(binary), "--vault", str(sandbox.vault), "hook", "claude-code"]
    )
    answered = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps({"hook_event_name": "SessionStart", "source": "startup"}),
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=True,
    )
    context = json.loads(answered.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "- USER.md#L" in context


def test_local_embeddings_through_the_binarys_own_server(
    binary: Path, sandbox: Sandbox, tiny_model: Path
) -> None:
    env = _local_env(sandbox, tiny_model)
    report = _run_json(binary, "--vault", sandbox.vault, "memory", "index", "--json", env=env)
    assert report["embed_error"] == ""
    assert report["chunks"] > 0
    assert report["embedded"] == report["chunks"]

    found = _run_json(
        binary, "--vault", sandbox.vault, "memory", "search", "sourdough", "--json", env=env
    )
    vector = found["legs"]["vector"]
    assert vector["ran"] is True, vector
    assert vector["candidates"] > 0
    assert found["results"][0]["path"] == "notes/sourdough.md"
    server_logs = list((sandbox.root / "xdg_state_home").rglob("embed-server-*.log"))
    assert server_logs, "the managed server wrote no log"


def test_one_file_background_reindex_outlives_the_search_that_started_it(
    binaries: Binaries, sandbox: Sandbox, tiny_model: Path
) -> None:
    """A search that finds stale task prefixes starts `apus memory index` in the background;
    from a one-file binary that child must run on its own after the search has exited."""
    env = _local_env(sandbox, tiny_model)

    def apus(*args: str, env: Mapping[str, str] = env) -> Any:
        return _run_json(binaries.onefile, "--vault", sandbox.vault, *args, env=env)

    unprefixed = {**env, "APUS_MEMORY__SEARCH__LOCAL__PREFIXSCHEME": "none"}
    report = apus("memory", "index", "--json", env=unprefixed)
    assert report["embedded"] == report["chunks"] > 0

    found = apus("memory", "search", "bread", "--json")
    assert found["legs"]["vector"]["ran"] is False  # re-embedding; keyword results meanwhile

    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        status = apus("memory", "status", "--json")
        if status["embeddings"]["state"] == "ready" or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    assert status["embeddings"]["state"] == "ready", status["embeddings"]
    found = apus("memory", "search", "bread", "--json")
    assert found["legs"]["vector"]["ran"] is True, found["legs"]


# -- helpers -------------------------------------------------------------------------------


def _local_env(sandbox: Sandbox, model: Path) -> dict[str, str]:
    return {
        **sandbox.env,
        "APUS_MEMORY__SEARCH__PROVIDER": "local",
        "APUS_MEMORY__SEARCH__LOCAL__MODELPATH": str(model),
        "APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE": "512",
    }


def _run(
    binary: Path, *args: str | os.PathLike[str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    command = [str(binary), *(str(arg) for arg in args)]
    result = subprocess.run(
        command,
        env=dict(env),
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=env["HOME"],
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, (
        f"{' '.join(command)} exited {result.returncode}\n"
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    )
    return result


def _run_json(binary: Path, *args: str | os.PathLike[str], env: Mapping[str, str]) -> Any:
    return json.loads(_run(binary, *args, env=env).stdout)


def _path_without_python_env() -> str:
    """PATH minus this interpreter's environment (the venv's bin)."""
    prefixes = {Path(sys.prefix).resolve(), Path(sys.exec_prefix).resolve()}
    kept = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry:
            continue
        resolved = Path(entry).resolve()
        if not any(resolved.is_relative_to(prefix) for prefix in prefixes):
            kept.append(entry)
    return os.pathsep.join(kept)


def _assert_no_python_with_apus(env: Mapping[str, str]) -> None:
    """The clean environment must not offer a Python that could run Apus, or a passing test
    would not show that the binary runs without one."""
    for name in ("python3", "python"):
        python = shutil.which(name, path=env["PATH"])
        if python is None:
            continue
        probe = subprocess.run(
            [python, "-c", "import apus"],
            env=dict(env),
            cwd=env["HOME"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert probe.returncode != 0, f"{python} can import apus in the clean environment"


def _processes_mentioning(text: str) -> list[int]:
    """Live processes (not zombies) whose command line or environment contains `text` (a
    /proc scan). The environment counts: the embedding server a binary starts names no
    sandbox path on its command line, but inherits the sandbox's HOME and TMPDIR, and its
    own unpack folder in TMPDIR goes only when it exits."""
    needle = text.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = (entry / "environ").read_bytes() if needle not in cmdline else b""
        except (OSError, IndexError):
            continue
        if (needle in cmdline or needle in environ) and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _wait_for_processes_mentioning(root: Path) -> list[int]:
    """Give servers and background runs time to notice their clients are gone and exit."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while True:
        alive = _processes_mentioning(str(root))
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _report(config: pytest.Config, line: str) -> None:
    """Show a line in the test session's output even though output is being captured."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(f"\n{line}")


def _tree_mb(path: Path) -> float:
    if path.is_file():
        return path.stat().st_size / 1e6
    files = (p for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return sum(p.stat().st_size for p in files) / 1e6
