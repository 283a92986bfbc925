"""The bearer token of `apus mcp --http` on a non-loopback bind: made on first use into a file
only its owner can read, read back only from such a file, compared in constant time.

The token is a secret: nothing here logs it or puts it in an error.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

from apus import paths
from apus.errors import ApusError

# 32 random bytes, URL-safe: as strong as a key gets, and safe in a header and a shell.
_TOKEN_BYTES = 32
_MAKE_IT = "apus mcp --token"


class TokenError(ApusError):
    """No usable bearer token for a server other machines can reach."""


def token_file() -> Path:
    return paths.http_token_file()


def ensure_token(path: Path | None = None) -> str:
    """The token, made now (0600, written whole or not at all) when there is none yet."""
    path = path or token_file()
    if path.exists():
        return read_token(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    staged = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (token + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(staged, path)  # never replaces a token another process made meanwhile
    except FileExistsError:
        return read_token(path)
    finally:
        staged.unlink()
    return token


def read_token(path: Path | None = None) -> str:
    """The token from its file; refused when there is none, when others may read the file,
    or when it holds no token."""
    path = path or token_file()
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise TokenError(
            "A server other machines can reach needs a bearer token, and none has been made.",
            fix=f"{_MAKE_IT}  (makes one in {path}, readable by you only; clients send it as "
            "`Authorization: Bearer TOKEN`)",
        ) from None
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        raise TokenError(
            f"The token file {path} is not a plain file of yours.",
            fix=f"remove it, then run {_MAKE_IT}",
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise TokenError(
            f"The token file {path} can be read by other users, so the token is not secret.",
            fix=f"chmod 600 {path}  (or remove it and run {_MAKE_IT} for a new one)",
        )
    token = path.read_text(encoding="ascii", errors="replace").strip()
    if len(token) < _TOKEN_BYTES:
        raise TokenError(
            f"The token file {path} holds no token.", fix=f"remove it, then run {_MAKE_IT}"
        )
    return token


def matches(given: str, token: str) -> bool:
    """Whether `given` is the token, in time that does not depend on where they differ."""
    return hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))
