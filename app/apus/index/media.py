"""Images and audio under `memory.search.extraPaths` as the index holds them (multimodal
memory): which indexed paths are media, and what a result shows about one.

A media file is one `files` row with one chunk: a short description (name, type, size, path)
that keyword search finds, and a vector the provider made from the file itself, so a text
query finds it by meaning. How a sync admits, describes and embeds them is
`apus.indexing.media`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from apus.embed.media import MEDIA_TYPES, media_type
from apus.units import human_size
from apus.vault.scan import MediaRule, is_note_name

MEDIA_RULE = MediaRule(frozenset(MEDIA_TYPES))


@dataclass(frozen=True)
class MediaFacts:
    """What a result shows about an image or audio file: its type and size."""

    mime_type: str
    size: int

    @property
    def label(self) -> str:
        """`image/png, 12.3 KB`: how the faces print it."""
        return f"{self.mime_type}, {human_size(self.size)}"


def is_media_path(path: str) -> bool:
    """Whether an indexed path is an image or audio file (notes are .md/.markdown only)."""
    return not is_note_name(path) and media_type(Path(path)) is not None


def media_facts(path: str, size: int) -> MediaFacts | None:
    mime = media_type(Path(path)) if not is_note_name(path) else None
    return MediaFacts(mime, size) if mime else None
