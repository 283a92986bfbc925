"""A model file changed in place is hashed again, even when its size and mtime are put back.

The cached verdict (and the sha256 cache behind the index identity) used to trust size and
mtime; a file rewritten with its mtime restored stayed "verified". The inode's ctime moves
with any such change and cannot be set back, so a verdict older than it is not trusted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from apus.embed.local.download import (
    DownloadError,
    model_path,
    pull_model,
    quarantine_dir,
    verify_model_file,
)
from apus.embed.local.filehash import cached_sha256, file_sha256
from support.fake_hub import TEST_REVISION, FakeHub, hub_manifest

CONTENT = b"GGUF" + bytes(range(256)) * 4_000


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with FakeHub() as server:
        server.add("apus-tests/tiny-GGUF", TEST_REVISION, "tiny.gguf", CONTENT)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def _rewrite_keeping_size_and_mtime(path: Path) -> None:
    """Flip one byte in place and put the mtime back, as a careful tamperer would."""
    info = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(len(CONTENT) // 2)
        byte = handle.read(1)
        handle.seek(len(CONTENT) // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size
    assert path.stat().st_mtime_ns == info.st_mtime_ns


def test_bytes_changed_with_the_mtime_put_back_fail_verification(hub: FakeHub) -> None:
    manifest = hub_manifest(CONTENT)
    path = pull_model(manifest)
    verify_model_file(path, manifest)  # the fast path: the cached verdict holds

    _rewrite_keeping_size_and_mtime(path)

    with pytest.raises(DownloadError, match="sha256"):
        verify_model_file(path, manifest)
    assert not path.exists()
    assert len(list(quarantine_dir().iterdir())) == 1


def test_pull_hashes_the_file_again_whatever_the_record_says(hub: FakeHub) -> None:
    manifest = hub_manifest(CONTENT)
    path = pull_model(manifest)
    _rewrite_keeping_size_and_mtime(path)
    # A record that vouches for the file as it is now (written by a racing process, or
    # copied along with the file): `models pull` checks the bytes regardless.
    record = path.with_name(path.name + ".verified.json")
    info = path.stat()
    data = json.loads(record.read_text(encoding="utf-8"))
    data.update(size=info.st_size, mtime_ns=info.st_mtime_ns, ctime_ns=info.st_ctime_ns)
    record.write_text(json.dumps(data), encoding="utf-8")
    verify_model_file(path, manifest)  # trusted: the fast path

    assert pull_model(manifest) == path
    assert path.read_bytes() == CONTENT  # quarantined and downloaded again
    assert len(hub.gets()) == 2


def test_the_sha256_cache_rehashes_a_file_rewritten_in_place() -> None:
    path = model_path(hub_manifest(CONTENT))
    path.parent.mkdir(parents=True)
    path.write_bytes(CONTENT)
    assert cached_sha256(path) == file_sha256(path)

    _rewrite_keeping_size_and_mtime(path)

    assert cached_sha256(path) == file_sha256(path)
