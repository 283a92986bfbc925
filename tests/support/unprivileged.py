"""Running the real CLI as an unprivileged user, for cases that root's privileges hide.

Root reads and enters any folder whatever its mode, so "permission denied" cases are run
as `nobody` in a subprocess: a Python of this version that `nobody` may execute, with this
interpreter's packages on its path. Tests skip only where no such setup is possible.
In-process cases (`call_unprivileged`) run in a forked child that becomes `nobody`: nothing
needs installing for that, so they never skip.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

NOBODY = 65534  # the conventional unprivileged user and group
T = TypeVar("T")


def _as_nobody() -> None:
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def _package_path() -> str:
    """This interpreter's packages (the venv, the source tree), not its standard library."""
    base = os.path.realpath(sys.base_prefix)
    entries = [p for p in sys.path if p and not os.path.realpath(p).startswith(base)]
    return os.pathsep.join(entries)


def unprivileged_apus() -> list[str]:
    """argv that runs `apus` as `nobody`; skips the test where that cannot be done."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("needs root, to run the command as an unprivileged user")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in dict.fromkeys([sys.executable, shutil.which(version), f"/usr/bin/{version}"]):
        if not python:
            continue
        argv = [
            python,
            "-c",
            "import sys; from apus.cli import main; sys.exit(main(prog_name='apus'))",
        ]
        try:
            probe = subprocess.run(
                [python, "-c", "import apus.cli"],
                env={"PYTHONPATH": _package_path(), "PATH": os.defpath},
                capture_output=True,
                preexec_fn=_as_nobody,
                check=False,
            )
        except OSError:  # `nobody` may not execute this one (it lives under /root)
            continue
        if probe.returncode == 0:
            return argv
    pytest.skip("no Python that an unprivileged user may run can import Apus here")


def run_as_nobody(argv: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv),
        env={**env, "PYTHONPATH": _package_path()},
        capture_output=True,
        text=True,
        encoding="utf-8",
        preexec_fn=_as_nobody,
        timeout=120,
        check=False,
    )


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A scratch folder `nobody` can enter (pytest's own is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="apus-test-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def nobody_home(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """`env` with HOME and the XDG folders in a folder of `nobody`'s under `root`."""
    home = root / "home"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    result = dict(env)
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        result[name] = str(home / name.lower())
    result["XDG_RUNTIME_DIR"] = str(home / "runtime")
    result["HOME"] = str(home)
    return result


def privileged() -> bool:
    """Whether this process reads and enters files whatever their mode (root)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def call_unprivileged(work: Callable[[], T], env: Mapping[str, str] | None = None) -> T:
    """`work()`'s result, computed where file modes are enforced: here when this process is
    not root, else in a forked child that has become `nobody` (with `env` set in it). Its
    files must be where `nobody` can reach them (`shared_folder`); its result and any
    exception it raises come back pickled."""
    if not privileged():
        return work()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 0
        try:
            os.close(read)
            os.environ.update(env or {})
            _as_nobody()
            try:
                outcome: tuple[bool, object] = (True, work())
            except BaseException as exc:
                outcome = (False, (exc, traceback.format_exc()))
            with os.fdopen(write, "wb") as pipe:
                pickle.dump(outcome, pipe)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert data and os.waitstatus_to_exitcode(status) == 0, "the unprivileged child failed"
    ok, value = pickle.loads(data)
    if ok:
        return value  # type: ignore[return-value]
    exc, text = value
    exc.add_note(f"raised as nobody, in a forked child:\n{text}")
    raise exc
