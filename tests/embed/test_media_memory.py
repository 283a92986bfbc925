"""Multimodal memory end to end through the real `apus` command line: images and audio under
`memory.search.extraPaths` are sent to a fake Gemini as inline data, found by a text query
that means them, shown with their type and size; files over the limits, and every file when
the provider embeds text only, are listed as skipped with the reason."""

from __future__ import annotations

import base64
import json
import wave
from pathlib import Path
from typing import Any

import pytest

from agents.test_mcp_server import agent, call, refused
from apus.tui.widgets.results import ResultList, hit_content
from tui.factory import make_app, settle

from .hosted import HARNESSES
from .test_hosted_cli import apus, cli_env, printed

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(200))
GEMINI = HARNESSES["gemini"]
# What the picture shows, in words that appear in no file name or note.
CAPTION = "moored sailboats dusk"


def media_folder(tmp_path: Path) -> dict[str, Path]:
    """An attachments folder beside the vault, and a picture in the vault itself."""
    folder = tmp_path / "attachments"
    folder.mkdir()
    files = {"photo": folder / "harbour-sunset.png", "memo": folder / "voice-memo.wav"}
    files["photo"].write_bytes(PNG)
    with wave.open(str(files["memo"]), "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(1)
        audio.setframerate(8000)
        audio.writeframes(bytes([128]) * 8000)
    files["huge"] = folder / "scan-huge.png"
    with files["huge"].open("wb") as handle:
        handle.write(PNG)
        handle.truncate(15_000_000)  # over the inline limit; sparse, so quick to make
    files["renamed"] = folder / "receipt.jpg"
    files["renamed"].write_text("not a picture", encoding="utf-8")
    (tmp_path / "vault").mkdir(exist_ok=True)
    files["in_vault"] = tmp_path / "vault" / "holiday.png"
    files["in_vault"].write_bytes(PNG)
    return files


def media_env(tmp_path: Path, provider: str, fake: Any) -> dict[str, str]:
    harness = HARNESSES[provider]
    env = cli_env(tmp_path, harness, fake, harness.secret)
    env["APUS_MEMORY__SEARCH__EXTRAPATHS"] = '["../attachments"]'
    if provider == "gemini":
        env["APUS_MEMORY__SEARCH__MODEL"] = "gemini-embedding-2"
    return env


def test_images_and_audio_are_embedded_found_by_meaning_and_shown_with_type_and_size(
    tmp_path: Path,
) -> None:
    files = media_folder(tmp_path)
    with GEMINI.fake() as fake:
        fake.model = "gemini-embedding-2"
        fake.meanings[CAPTION] = PNG
        env = media_env(tmp_path, "gemini", fake)
        index = apus(env, "memory", "index", "--json")
        sent = list(fake.media)
        by_meaning = apus(env, "memory", "search", CAPTION, "--json")
        by_name = apus(env, "memory", "search", "voice memo", "--json")
        shown = apus(env, "memory", "search", CAPTION)
        status = apus(env, "memory", "status", "--json")
        again = apus(env, "memory", "index", "--json")
        unchanged = len(fake.matching(":embedContent"))
        files["photo"].write_bytes(PNG + b"edited")
        edited = apus(env, "memory", "index", "--json")
        media_requests = fake.matching(":embedContent")
    assert index.returncode == 0, index.stderr
    assert json.loads(index.stdout)["embed_error"] == ""
    # Each admitted file went once, as inline data with its type and its exact bytes.
    assert sent == [("image/png", PNG), ("audio/wav", files["memo"].read_bytes())]
    inline = media_requests[0].body["content"]["parts"][0]["inlineData"]
    assert inline == {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}
    assert media_requests[0].path == "/v1beta/models/gemini-embedding-2:embedContent"
    # Unchanged files are not sent again (their vectors come from the cache); an edited one is.
    assert again.returncode == 0 and unchanged == 2
    assert edited.returncode == 0 and len(media_requests) == 3
    assert fake.media[-1] == ("image/png", PNG + b"edited")

    best = json.loads(by_meaning.stdout)["results"][0]
    assert best["path"] == "../attachments/harbour-sunset.png"
    assert best["media"] == {"type": "image/png", "bytes": len(PNG)}
    assert best["legs"] == ["vector"]  # found by meaning alone: no word of the query matches
    memo = json.loads(by_name.stdout)["results"][0]
    assert memo["path"] == "../attachments/voice-memo.wav"
    assert memo["media"]["type"] == "audio/wav" and "keyword" in memo["legs"]
    assert f"../attachments/harbour-sunset.png  (image/png, {len(PNG)} bytes)" in shown.stdout

    skipped = {item["path"]: item["reason"] for item in json.loads(status.stdout)["skipped"]}
    assert "over the 14,952,000-byte limit" in skipped["../attachments/scan-huge.png"]
    assert "the content is not image/jpeg" in skipped["../attachments/receipt.jpg"]
    everything = printed(index, by_meaning, by_name, shown, status, again, edited)
    assert "holiday.png" not in everything  # the vault itself stays notes-only
    assert GEMINI.secret not in everything


def test_a_text_only_provider_lists_images_and_audio_as_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    media_folder(tmp_path)
    openai = HARNESSES["openai"]
    with openai.fake() as fake:
        env = media_env(tmp_path, "openai", fake)
        index = apus(env, "memory", "index", "--json")
        status = apus(env, "memory", "status")
        status_json = apus(env, "memory", "status", "--json")
        sent = [request.body for request in fake.matching("/embeddings")]
    assert index.returncode == 0, index.stderr
    skipped = {item["path"]: item["reason"] for item in json.loads(status_json.stdout)["skipped"]}
    for name in ("harbour-sunset.png", "voice-memo.wav"):
        reason = skipped[f"../attachments/{name}"]
        assert reason.startswith("openai model text-embedding-3-small embeds text only")
        assert 'memory.search.model = "gemini-embedding-2"' in reason
    shown = " ".join(status.stdout.split())  # the terminal wraps long lines
    assert "harbour-sunset.png" in shown and "embeds text only" in shown
    assert "harbour" not in json.dumps(sent)  # no description was embedded as text either


async def test_the_agent_tools_and_the_app_show_the_file_with_its_type_and_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    media_folder(tmp_path)
    vault = tmp_path / "vault"
    with GEMINI.fake() as fake:
        fake.model = "gemini-embedding-2"
        fake.meanings[CAPTION] = PNG
        env = media_env(tmp_path, "gemini", fake)
        assert apus(env, "memory", "index").returncode == 0
        async with agent(vault, {**env, "APUS_MEMORY__SEARCH__SYNC__WATCH": "false"}) as session:
            answer = await call(session, "memory_search", query=CAPTION)
            refusal = await refused(session, "memory_get", path=answer["results"][0]["path"])
        for name, value in env.items():
            if name.startswith("APUS_") or name == "GEMINI_API_KEY":
                monkeypatch.setenv(name, value)
        app = make_app(vault, tmp_path / "config.toml")
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press(*CAPTION)
            await settle(pilot)
            hits = app.screen.query_one(ResultList).hits
            shown = hit_content(hits[0], 60).plain
    best = answer["results"][0]
    assert best["path"] == "../attachments/harbour-sunset.png"
    assert best["media"] == {"type": "image/png", "bytes": len(PNG)}
    assert "is an image or audio file" in refusal
    assert hits[0].path == "../attachments/harbour-sunset.png"
    assert f"../attachments/harbour-sunset.png  image/png, {len(PNG)} bytes" in shown


def test_switching_to_a_text_only_provider_takes_the_files_out_of_the_index(
    tmp_path: Path,
) -> None:
    media_folder(tmp_path)
    with GEMINI.fake() as gemini, HARNESSES["openai"].fake() as openai:
        gemini.model = "gemini-embedding-2"
        first = apus(media_env(tmp_path, "gemini", gemini), "memory", "index", "--json")
        text_only = media_env(tmp_path, "openai", openai)
        # The keyword step drops them at once, though vectors of another provider pause.
        kept = apus(text_only, "memory", "index", "--json")
        forced = apus(text_only, "memory", "index", "--force", "--json")
        found = apus(text_only, "memory", "search", "harbour sunset", "--json")
        status = apus(text_only, "memory", "status", "--json")
    assert first.returncode == 0 and json.loads(first.stdout)["files"] == 5  # 3 notes, 2 media
    assert json.loads(kept.stdout)["files"] == 3 and json.loads(kept.stdout)["removed"] == 2
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["files"] == 3
    assert all(hit["media"] is None for hit in json.loads(found.stdout)["results"])
    skipped = {item["path"]: item["reason"] for item in json.loads(status.stdout)["skipped"]}
    assert "embeds text only" in skipped["../attachments/harbour-sunset.png"]
