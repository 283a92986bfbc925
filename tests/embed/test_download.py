"""Model downloads through a real HTTP hub on 127.0.0.1: resume, verification, quarantine."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

from apus.embed.local.catalog import ModelManifest
from apus.embed.local.download import (
    DownloadCancelled,
    DownloadError,
    installed_models,
    model_path,
    pull_model,
    quarantine_dir,
    verify_model_file,
)
from support.fake_hub import TEST_REVISION, FakeHub, hub_manifest
from support.ports import refusing_port

REVISION = TEST_REVISION
CONTENT = b"GGUF" + bytes(range(256)) * 12_000  # about 3 MB, several network reads


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with FakeHub() as server:
        server.add("apus-tests/tiny-GGUF", REVISION, "tiny.gguf", CONTENT)
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def test_pull_downloads_verifies_and_reports_progress(hub: FakeHub) -> None:
    manifest = hub_manifest(CONTENT)
    seen: list[tuple[int, int]] = []
    path = pull_model(manifest, progress=lambda done, total: seen.append((done, total)))
    assert path == model_path(manifest)
    assert path.read_bytes() == CONTENT
    assert seen[-1] == (len(CONTENT), len(CONTENT))
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)
    assert hub.gets()[0].path == f"/apus-tests/tiny-GGUF/resolve/{REVISION}/tiny.gguf"

    # Already there and verified: no second transfer.
    assert pull_model(manifest) == path
    assert len(hub.gets()) == 1


def test_a_cut_connection_is_resumed_with_a_range_request(hub: FakeHub) -> None:
    hub.cut_after_bytes = 1_000_000
    hub.cuts_left = 1
    path = pull_model(hub_manifest(CONTENT))
    assert path.read_bytes() == CONTENT
    first, second = hub.gets()
    assert first.header("Range") is None
    assert second.header("Range") == "bytes=1000000-"


def test_a_cancelled_download_continues_in_the_next_pull(hub: FakeHub) -> None:
    manifest = hub_manifest(CONTENT)
    cancel = threading.Event()

    def stop_after_some(done: int, total: int) -> None:
        if done >= 500_000:
            cancel.set()

    with pytest.raises(DownloadCancelled):
        pull_model(manifest, progress=stop_after_some, cancel=cancel)
    partial = list(model_path(manifest).parent.glob("*.part"))
    assert len(partial) == 1
    kept = partial[0].stat().st_size
    assert 0 < kept < len(CONTENT)
    assert not model_path(manifest).exists()

    path = pull_model(manifest)
    assert path.read_bytes() == CONTENT
    assert hub.gets()[-1].header("Range") == f"bytes={kept}-"
    assert not list(path.parent.glob("*.part"))


def test_corrupted_bytes_are_refused_and_quarantined(hub: FakeHub) -> None:
    hub.corrupt = True
    manifest = hub_manifest(CONTENT)
    with pytest.raises(DownloadError) as caught:
        pull_model(manifest)
    message = str(caught.value)
    assert "sha256" in message
    assert "apus models pull tiny-test" in message
    assert not model_path(manifest).exists()
    quarantined = list(quarantine_dir().iterdir())
    assert len(quarantined) == 1
    assert quarantined[0].name.startswith("tiny.gguf.")
    assert quarantined[0].stat().st_size == len(CONTENT)
    # Nothing else was left behind next to where the model would go.
    leftovers = [p.name for p in model_path(manifest).parent.iterdir() if p.suffix != ".lock"]
    assert leftovers == []


def test_an_unreachable_hub_fails_at_once_with_an_offline_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with refusing_port() as port:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        with pytest.raises(DownloadError) as caught:
            pull_model(hub_manifest(CONTENT))
    assert "Cannot reach the model hub" in caught.value.reason
    assert "HF_ENDPOINT" in (caught.value.fix or "")


def test_a_missing_file_on_the_hub_says_404(hub: FakeHub) -> None:
    manifest = hub_manifest(CONTENT, name="other")
    missing = ModelManifest(**{**manifest.__dict__, "file": "absent.gguf"})
    with pytest.raises(DownloadError, match="HTTP 404"):
        pull_model(missing)


def test_verification_quarantines_a_tampered_file_and_listing_does_not(hub: FakeHub) -> None:
    manifest = hub_manifest(CONTENT)
    path = pull_model(manifest)
    assert installed_models() == []  # the test manifest is not in the shipped catalogue

    tampered = bytearray(CONTENT)
    tampered[-1] ^= 0xFF
    path.write_bytes(bytes(tampered))
    os.utime(path, ns=(1, 1))  # a different mtime invalidates the cached verdict
    with pytest.raises(DownloadError, match="sha256"):
        verify_model_file(path, manifest, quarantine=False)
    assert path.exists()
    with pytest.raises(DownloadError, match="moved to"):
        verify_model_file(path, manifest)
    assert not path.exists()
    assert len(list(quarantine_dir().iterdir())) == 1


def test_installed_models_lists_present_models_with_their_verdict() -> None:
    manifest = hub_manifest(CONTENT, name="listed")
    catalog = {manifest.name: manifest}
    assert installed_models(catalog) == []
    path = model_path(manifest)
    path.parent.mkdir(parents=True)
    path.write_bytes(CONTENT)
    (listed,) = installed_models(catalog)
    assert (listed.manifest.name, listed.path, listed.verified) == ("listed", path, True)
    assert path.with_name(path.name + ".verified.json").is_file()  # next listing is instant
    path.write_bytes(CONTENT[:-1] + b"x")
    os.utime(path, ns=(1, 1))
    (listed,) = installed_models(catalog)
    assert listed.verified is False
    assert path.exists()  # listing never moves files
