"""How a sync takes in images and audio under `memory.search.extraPaths` (multimodal memory).

A media file becomes one `files` row with one chunk: a short description (name, type, size,
path) that keyword search finds. Its vector is not the description's: the provider embeds
the file itself (`embed_media`), into the same space as text, so a text query finds it by
meaning. The vector is cached under the provider identity + the sha256 of the file's bytes,
so an unchanged file is never sent twice, whatever it is called.

Whether media are indexed at all is decided once per sync from the provider: one that embeds
text only leaves them out, each listed as skipped with the reason (and `status` shows it).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from apus.embed.base import EmbeddingIdentity
from apus.embed.local.filehash import file_sha256
from apus.embed.media import (
    MediaSkipped,
    MediaSupport,
    media_skip_reason,
    media_support,
    media_type,
    text_only,
)
from apus.index.media import is_media_path
from apus.index.store import ChunkRecord, NewFile, Store
from apus.units import human_size
from apus.vault.chunk import Chunk
from apus.vault.scan import NoteText, ScannedFile, ScanResult, SkippedFile

_KINDS = {"image": "Image", "audio": "Audio"}


def admit_media(scan: ScanResult, embedder: Any) -> ScanResult:
    """The scan with the media files this provider cannot take moved to `skipped`.

    All of them when it embeds text only (with its reason and what would embed them); with a
    multimodal provider, those over the service's limits or not what their suffix says.
    """
    media = [scanned for scanned in scan.files if is_media_path(scanned.rel_path)]
    if not media:
        return scan
    support = (
        media_support(embedder)
        if embedder is not None
        else MediaSupport(False, "keyword-only search embeds nothing", text_only("", "").fix)
    )
    if not support.supported:
        reason = f"{support.reason}; {support.fix}" if support.fix else support.reason
        refused = {scanned.rel_path: reason for scanned in media}
    else:
        refused = {}
        for scanned in media:
            why = media_skip_reason(scanned.abs_path)
            if why is not None:
                refused[scanned.rel_path] = why
    if not refused:
        return scan
    return ScanResult(
        files=[scanned for scanned in scan.files if scanned.rel_path not in refused],
        skipped=[*scan.skipped, *(SkippedFile(path, why) for path, why in refused.items())],
    )


def describe(rel_path: str, mime: str, size: int) -> str:
    """The description chunk: what keyword search finds and the faces show as the snippet."""
    name = rel_path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0]
    words = " ".join(stem.replace("_", " ").replace("-", " ").split())
    kind = _KINDS.get(mime.split("/", 1)[0], "Media")
    return f"{kind}: {name} ({words})\n{mime}, {human_size(size)}\n{rel_path}"


def read_media(scanned: ScannedFile) -> NoteText:
    """An admitted media file as the indexer reads a note: its description as the text, the
    sha256 of its bytes (what the vector depends on), or why it cannot be read."""
    mime = media_type(scanned.abs_path)
    if mime is None:
        return NoteText(None, "", skip_reason="not an image or audio type Apus embeds")
    digest = hashlib.sha256()
    size = 0
    try:
        with scanned.abs_path.open("rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
                size += len(block)
    except OSError as exc:
        return NoteText(None, "", skip_reason=(exc.strerror or type(exc).__name__).lower())
    return NoteText(describe(scanned.rel_path, mime, size), digest.hexdigest())


def media_new_file(scanned: ScannedFile, note: NoteText, signature: str) -> NewFile:
    """The store row of a media file: one description chunk, dated by its modification day."""
    assert note.text is not None
    text = note.text
    modified = dt.datetime.fromtimestamp(scanned.mtime_ns / 1e9).date().isoformat()
    return NewFile(
        path=scanned.rel_path,
        size=scanned.size,
        mtime_ns=scanned.mtime_ns,
        sha256=note.sha256,
        title=scanned.rel_path.rsplit("/", 1)[-1],
        note_date=None,  # evergreen: a photo's age says nothing about its relevance
        importance=None,
        triggers=(),
        chunking=signature,
        replaced_utf8=False,
        chunks=[Chunk(0, text, 1, text.count("\n") + 1, (), len(text.split()))],
        dated=modified,
    )


def media_cache_key(identity: EmbeddingIdentity, sha256: str) -> str:
    """Provider identity + the file's content: a renamed or re-indexed file is not re-sent."""
    return f"{identity.key()}:media:{sha256}"


@dataclass(frozen=True)
class MediaVectors:
    """What embedding one batch's media chunks did: files sent, and vectors from the cache."""

    embedded: int = 0
    cached: int = 0


def split_media(chunks: Sequence[ChunkRecord]) -> tuple[list[ChunkRecord], list[ChunkRecord]]:
    """(text chunks, media chunks) of one batch, in their order."""
    media = [chunk for chunk in chunks if is_media_path(chunk.path)]
    if not media:
        return list(chunks), []
    return [chunk for chunk in chunks if not is_media_path(chunk.path)], media


def embed_media_chunks(
    store: Store, embedder: Any, identity: EmbeddingIdentity, chunks: Sequence[ChunkRecord]
) -> MediaVectors:
    """Give each media chunk its vector: from the cache, else the file sent to the provider.

    Each vector is committed as soon as it comes back, so a file (up to 15 MB a request) is
    never paid for twice when a later request fails. A file that changed since it was
    indexed (its bytes no longer match the stored sha256) is left without a vector: the next
    sync reads it again. Provider errors propagate, as for text.
    """
    vault = Path(store.get_meta("vault") or ".")
    key = identity.key()
    embedded = cached = 0
    for chunk in chunks:
        record = store.file_by_path(chunk.path)
        if record is None:
            continue
        cache_key = media_cache_key(identity, record.sha256)
        fresh: list[tuple[str, np.ndarray]] = []
        if store.cached_vectors([cache_key]):
            cached += 1
        else:
            path = Path(os.path.normpath(vault / chunk.path))
            if _sha256_or_empty(path) != record.sha256:
                continue
            try:
                fresh = [(cache_key, embedder.embed_media(path)[0])]
            except MediaSkipped:
                continue
            embedded += 1
        with store.transaction():
            store.put_vectors(fresh)
            store.set_chunk_vectors([(chunk.id, key, cache_key)])
    return MediaVectors(embedded, cached)


def _sha256_or_empty(path: Path) -> str:
    try:
        return file_sha256(path)
    except OSError:  # gone or unreadable since the scan: no vector until the next sync
        return ""
