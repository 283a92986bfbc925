"""Images and audio as embedding inputs: which files qualify, their limits, who can embed them.

The indexer asks `media_support(embedder)` once per run and `media_skip_reason(path)` per file
(cheap: a stat and a header read); it sends only files with no skip reason through the
embedder's `embed_media(path)`. Everything here runs on the client; no request is made.
"""

from __future__ import annotations

import wave
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apus.errors import ApusError

# File types the multimodal Gemini embedding models accept as inline data.
MEDIA_TYPES: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".mp3": "audio/mpeg",
    ".wav": "audio/wav",
}
# The Gemini API takes at most 20 MB per request, inline data included; base64 makes a file
# 4/3 larger, and the JSON around it needs a little room.
MAX_REQUEST_BYTES = 20_000_000
MAX_INLINE_FILE_BYTES = (MAX_REQUEST_BYTES - 64_000) * 3 // 4
# gemini-embedding-2 reads at most 80 seconds of audio.
MAX_AUDIO_SECONDS = 80.0
_HEADER_BYTES = 16


@dataclass(frozen=True)
class MediaSupport:
    """Whether an embedder can embed images and audio; when not, why and what would."""

    supported: bool
    reason: str = ""
    fix: str = ""


def text_only(provider: str, model: str) -> MediaSupport:
    return MediaSupport(
        False,
        f"{provider} model {model} embeds text only",
        fix='images and audio need memory.search.provider = "gemini" with '
        'memory.search.model = "gemini-embedding-2"',
    )


def media_support(embedder: Any) -> MediaSupport:
    """Ask any embedder (local, remote, unavailable) whether it embeds images and audio."""
    check: Callable[[], MediaSupport] | None = getattr(embedder, "media_support", None)
    if check is not None:
        return check()
    identity = getattr(embedder, "identity", None)
    name = f"{identity.provider} model {identity.model}" if identity else "this provider"
    return MediaSupport(False, f"{name} embeds text only", text_only("", "").fix)


class MediaSkipped(ApusError):
    """A media file that will not be sent; `message` says why (listed by `status`)."""


@dataclass(frozen=True)
class MediaFile:
    """A file ready to be sent as inline data."""

    path: Path
    mime_type: str
    data: bytes


def media_type(path: Path) -> str | None:
    """The MIME type Apus would send `path` as, from its suffix (None: not a media file)."""
    return MEDIA_TYPES.get(path.suffix.lower())


def media_skip_reason(path: Path, *, max_bytes: int = MAX_INLINE_FILE_BYTES) -> str | None:
    """Why `path` cannot be embedded as media, or None when it can (reads only its header)."""
    mime = media_type(path)
    if mime is None:
        return f"{path.suffix or 'no suffix'} is not an image or audio type Apus embeds"
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(_HEADER_BYTES)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    if size == 0:
        return "the file is empty"
    if size > max_bytes:
        return f"{size:,} bytes is over the {max_bytes:,}-byte limit for inline data"
    if not _looks_like(mime, head):
        return f"the content is not {mime} (the suffix says it should be)"
    if mime == "audio/wav":
        return _wav_length_reason(path)
    return None


def load_media(path: Path, *, max_bytes: int = MAX_INLINE_FILE_BYTES) -> MediaFile:
    """Read a media file for sending; MediaSkipped with the reason when it does not qualify."""
    reason = media_skip_reason(path, max_bytes=max_bytes)
    if reason is not None:
        raise MediaSkipped(f"{path.name}: {reason}")
    mime = media_type(path)
    assert mime is not None
    return MediaFile(path, mime, path.read_bytes())


def _looks_like(mime: str, head: bytes) -> bool:
    """The file's first bytes match its type (no point paying to embed a renamed file)."""
    if mime == "image/png":
        return head.startswith(b"\x89PNG\r\n\x1a\n")
    if mime == "image/jpeg":
        return head.startswith(b"\xff\xd8\xff")
    if mime == "image/webp":
        return head[:4] == b"RIFF" and head[8:12] == b"WEBP"
    if mime == "audio/wav":
        return head[:4] == b"RIFF" and head[8:12] == b"WAVE"
    if mime == "audio/mpeg":
        # An ID3 tag, or straight into an MPEG audio frame (11 sync bits set).
        return head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] >= 0xE0)
    return False


def _wav_length_reason(path: Path) -> str | None:
    try:
        with wave.open(str(path), "rb") as audio:
            seconds = audio.getnframes() / float(audio.getframerate() or 1)
    except (wave.Error, EOFError, OSError):
        return None  # compressed WAV variants: the service judges their length itself
    if seconds > MAX_AUDIO_SECONDS:
        return f"{seconds:.0f} s of audio is over the {MAX_AUDIO_SECONDS:.0f} s the model reads"
    return None
