"""Every on-disk location Apus uses; nothing else decides a path.

Locations follow the platform conventions through platformdirs, which honours the XDG
variables (XDG_DATA_HOME, XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_STATE_HOME, XDG_RUNTIME_DIR)
on Linux, so tests and scripts can isolate them.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path

import platformdirs

from apus.errors import ApusError

APP_NAME = "apus"
_PACKAGE_DIR = Path(__file__).resolve().parent


def config_dir() -> Path:
    return platformdirs.user_config_path(APP_NAME)


def config_file() -> Path:
    override = os.environ.get("APUS_CONFIG")
    return Path(override).expanduser() if override else config_dir() / "config.toml"


def data_dir() -> Path:
    return platformdirs.user_data_path(APP_NAME)


def cache_dir() -> Path:
    return platformdirs.user_cache_path(APP_NAME)


def log_dir() -> Path:
    return platformdirs.user_log_path(APP_NAME)


def claude_code_dir(home: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's own folder (its transcripts under `projects/`, its settings.json):
    CLAUDE_CONFIG_DIR, else ~/.claude (of `home` and `env` when given: `apus connect`'s
    tests hand in their own)."""
    override = (os.environ if env is None else env).get("CLAUDE_CONFIG_DIR")
    return Path(override).expanduser() if override else (home or Path.home()) / ".claude"


def codex_home(home: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Codex's own folder (its transcripts under `sessions/`, its config.toml): CODEX_HOME,
    else ~/.codex."""
    override = (os.environ if env is None else env).get("CODEX_HOME")
    return Path(override).expanduser() if override else (home or Path.home()) / ".codex"


def http_token_file() -> Path:
    """The bearer token clients of `apus mcp --http` send on a non-loopback bind (0600)."""
    return config_dir() / "mcp-http-token"


def models_dir() -> Path:
    """Where downloaded model files live (large, re-downloadable: a cache)."""
    return cache_dir() / "models"


class RuntimeDirError(ApusError):
    """Neither the runtime folder nor its fallback can be made private to this user."""


def runtime_dir() -> Path:
    """Per-user runtime files (the managed server's state file); private to the user.

    The XDG runtime folder when it is ours and private; else `run` in the state folder.
    Without XDG_RUNTIME_DIR, platformdirs picks `runtime-<uid>` in the temporary folder,
    a name another user can create first: it raises PermissionError then, and a folder
    someone else controls must not hold the server's key either way.
    """
    try:
        with warnings.catch_warnings():
            # platformdirs warns when it falls back from XDG_RUNTIME_DIR: we have our own.
            warnings.simplefilter("ignore")
            path = platformdirs.user_runtime_path(APP_NAME)
        make_private_dirs(path)
    except OSError:
        path = platformdirs.user_state_path(APP_NAME) / "run"
        try:
            make_private_dirs(path)
        except OSError as exc:
            raise RuntimeDirError(
                f"No private folder for Apus's runtime files: {exc}.",
                fix=f"set XDG_RUNTIME_DIR to a folder only you can open (mode 0700), "
                f"or remove {path}",
            ) from exc
    return path


def make_private_dirs(path: Path) -> None:
    """Create missing folders as 0700, then make sure the last one is ours and private."""
    for folder in [*reversed(path.parents), path]:
        if not folder.exists():
            folder.mkdir(mode=0o700)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise PermissionError(f"{path} is not a plain folder")
    if not hasattr(os, "geteuid"):
        return  # Windows: per-user folders are protected by their ACLs
    if info.st_uid != os.geteuid():
        raise PermissionError(f"{path} belongs to another user (uid {info.st_uid})")
    if stat.S_IMODE(info.st_mode) & 0o077:
        path.chmod(0o700)  # ours, made by an older Apus or a umask: close it


def vault_key(vault: Path) -> str:
    """A stable short name for a vault, from its resolved path."""
    resolved = str(vault.expanduser().resolve())
    return hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:16]


class IndexFolderError(ApusError):
    """Something that is not a folder stands where an index folder must be."""


def index_dir(vault: Path, override: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding one vault's SQLite store and derived indexes.

    Raises IndexFolderError when a file (or anything but a folder) is in its place: it is
    not Apus's to remove, and every command would otherwise fail on it in its own way.
    """
    path = Path(override).expanduser() if override else data_dir() / "indexes" / vault_key(vault)
    if os.path.lexists(path) and not path.is_dir():
        raise IndexFolderError(
            f"The index folder {path} is not a folder (a file is in its place).",
            fix="move that file elsewhere (Apus does not delete it), then run `apus memory index`",
        )
    return path


def _shipped_dir(name: str) -> Path:
    """A folder shipped with Apus: inside the wheel/binary, or at the repo root in a checkout."""
    frozen_root = getattr(sys, "_MEIPASS", None)
    candidates = [_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent.parent / name]
    if frozen_root:
        candidates.insert(0, Path(frozen_root) / "apus" / "_data" / name)
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[-1]


def bundled_models_dir() -> Path:
    """Model manifests (`models/*.toml`)."""
    return _shipped_dir("models")
