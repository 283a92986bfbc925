"""Images and audio with gemini-embedding-2: inline data checked by a fake Gemini, size and
length limits as skip reasons, and every other embedder saying it embeds text only."""

from __future__ import annotations

import base64
import wave
from pathlib import Path

import numpy as np
import pytest

from apus.config import SearchSettings
from apus.embed.media import (
    MAX_INLINE_FILE_BYTES,
    MediaSkipped,
    media_skip_reason,
    media_support,
    media_type,
)
from apus.embed.providers import create_embedder, resolve_provider
from support.fake_apis import media_vector

from .hosted import DIMS, HARNESSES

HARNESS = HARNESSES["gemini"]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(64))
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(64))
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(range(32))
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\xff\xfb\x90\x00" + bytes(64)


def write_wav(path: Path, seconds: float, rate: int = 8000) -> Path:
    with wave.open(str(path), "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(1)
        audio.setframerate(rate)
        audio.writeframes(bytes([128]) * int(seconds * rate))
    return path


@pytest.fixture
def media_files(tmp_path: Path) -> dict[str, Path]:
    files = {"photo.png": PNG, "scan.JPG": JPEG, "sticker.webp": WEBP, "memo.mp3": MP3}
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / name
        paths[name].write_bytes(data)
    paths["voice.wav"] = write_wav(tmp_path / "voice.wav", seconds=2)
    return paths


def gemini2(fake: object) -> SearchSettings:
    return HARNESS.settings(fake).model_copy(update={"model": "gemini-embedding-2"})  # type: ignore[arg-type]


def test_images_and_audio_go_as_inline_data_with_their_mime_type(
    media_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with HARNESS.running(monkeypatch) as fake:
        fake.model = "gemini-embedding-2"
        embedder = create_embedder(gemini2(fake))
        assert media_support(embedder).supported
        vectors = {name: embedder.embed_media(path) for name, path in media_files.items()}
    assert [mime for mime, _data in fake.media] == [
        "image/png",
        "image/jpeg",
        "image/webp",
        "audio/mpeg",
        "audio/wav",
    ]
    for (_mime, data), (name, path) in zip(fake.media, media_files.items(), strict=True):
        assert data == path.read_bytes()
        raw = np.asarray(media_vector(data, DIMS))
        np.testing.assert_allclose(vectors[name][0], raw / np.linalg.norm(raw), rtol=1e-5)
    request = fake.requests[0]
    assert request.path == "/v1beta/models/gemini-embedding-2:embedContent"
    part = request.body["content"]["parts"][0]["inlineData"]
    assert part == {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}
    assert request.body["outputDimensionality"] == DIMS
    assert "taskType" not in request.body  # the stable -2 model takes no task type


def test_files_over_the_limits_are_skipped_with_the_reason_and_never_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = tmp_path / "huge.png"
    with huge.open("wb") as handle:
        handle.write(PNG)
        handle.truncate(MAX_INLINE_FILE_BYTES + 1)  # sparse: quick to make
    long_audio = write_wav(tmp_path / "lecture.wav", seconds=81)
    renamed = tmp_path / "notes.png"
    renamed.write_text("not a picture", encoding="utf-8")
    assert "over the 14,952,000-byte limit" in (media_skip_reason(huge) or "")
    assert "81 s of audio is over the 80 s" in (media_skip_reason(long_audio) or "")
    assert "the content is not image/png" in (media_skip_reason(renamed) or "")
    assert "not an image or audio type" in (media_skip_reason(tmp_path / "a.gif") or "")
    assert media_type(tmp_path / "A.JPEG") == "image/jpeg"
    with HARNESS.running(monkeypatch) as fake:
        fake.model = "gemini-embedding-2"
        embedder = create_embedder(gemini2(fake))
        for path in (huge, long_audio, renamed):
            with pytest.raises(MediaSkipped, match=path.name):
                embedder.embed_media(path)
    assert fake.requests == []


def test_other_embedders_say_they_embed_text_only(monkeypatch: pytest.MonkeyPatch) -> None:
    with HARNESS.running(monkeypatch) as fake:
        text_model = media_support(create_embedder(HARNESS.settings(fake)))
    assert not text_model.supported
    assert text_model.reason == "gemini model gemini-embedding-001 embeds text only"
    assert 'memory.search.model = "gemini-embedding-2"' in text_model.fix

    monkeypatch.setenv("OPENAI_API_KEY", "sk-media-test-000000000000")
    openai = media_support(create_embedder(SearchSettings(provider="openai")))
    assert openai.reason == "openai model text-embedding-3-small embeds text only"

    unavailable = resolve_provider(SearchSettings(provider="voyage")).embedder
    assert "needs an API key" in media_support(unavailable).reason
    assert media_support(object()).supported is False
