"""apus.first_run without a UI: folder checks, provider choices, GGUF checks, saving config."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest

from apus.first_run import (
    PROVIDER_CHOICES,
    SetupChoices,
    check_folder,
    check_gguf,
    count_notes,
    detect_hardware,
    key_in_environment,
    save_choices,
)
from support.llama_build import backend_libraries, build_offloads
from support.tiny_gguf import write_tiny_gguf


def test_check_folder_verdicts(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "a.md").write_text("a", encoding="utf-8")
    (notes / "sub" / "b.markdown").write_text("b", encoding="utf-8")
    (notes / "picture.png").write_bytes(b"\x89PNG")
    assert check_folder("").level == "error"
    assert "does not exist" in check_folder(str(tmp_path / "nope")).message
    file_check = check_folder(str(notes / "a.md"))
    assert (file_check.level, file_check.usable) == ("error", False)
    assert "is a file" in file_check.message
    good = check_folder(str(notes))
    assert (good.level, good.notes, good.path) == ("ok", 2, notes)
    assert good.message == "2 notes found."
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check_folder(str(empty)).level == "warning"
    assert check_folder(str(empty)).usable


def test_check_folder_expands_home_and_warns_about_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "x.md").write_text("x", encoding="utf-8")
    assert check_folder("~/notes").path == tmp_path / "notes"
    whole_home = check_folder("~")
    assert whole_home.level == "warning" and "whole home" in whole_home.message


def test_count_notes_skips_hidden_folders_and_stops_at_the_limit(tmp_path: Path) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "hidden.md").write_text("h", encoding="utf-8")
    for number in range(5):
        (tmp_path / f"n{number}.md").write_text("n", encoding="utf-8")
    assert count_notes(tmp_path) == (5, False)
    assert count_notes(tmp_path, limit=3) == (3, True)


def test_config_updates_per_provider(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    assert SetupChoices(vault, "none").config_updates() == {
        "vault": str(vault),
        "memory.search.provider": "none",
    }
    local = SetupChoices(vault, "local", model="embeddinggemma-300m").config_updates()
    assert local["memory.search.model"] == "embeddinggemma-300m"
    assert local["memory.search.local.modelPath"] == ""
    own = SetupChoices(vault, "local", model="x", model_path="/m/own.gguf").config_updates()
    assert (own["memory.search.model"], own["memory.search.local.modelPath"]) == (
        "",
        "/m/own.gguf",
    )
    remote = SetupChoices(
        vault, "ollama", model="embeddinggemma", base_url="http://127.0.0.1:11434"
    ).config_updates()
    assert remote["memory.search.remote.baseUrl"] == "http://127.0.0.1:11434"
    assert [c.name for c in PROVIDER_CHOICES] == [
        "local",
        "ollama",
        "lmstudio",
        "openai-compatible",
        "openai",
        "gemini",
        "voyage",
        "mistral",
        "deepinfra",
        "bedrock",
        "github-copilot",
        "none",
    ]
    hosted = [c for c in PROVIDER_CHOICES if c.hosted]
    assert all(c.remote and c.default_model and "bills your account" in c.warning for c in hosted)
    openai = next(c for c in PROVIDER_CHOICES if c.name == "openai")
    assert (openai.default_model, openai.key_env) == ("text-embedding-3-small", ("OPENAI_API_KEY",))
    assert openai.warning.startswith("OpenAI receives the text of every note")
    assert not any(c.warning for c in PROVIDER_CHOICES if not c.hosted)


def test_save_choices_keeps_the_users_comments(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '# my notes setup\n[tui]\ntheme = "nord"  # easier on the eyes\n', encoding="utf-8"
    )
    save_choices(SetupChoices(tmp_path / "vault", "none"), config_file=config)
    text = config.read_text(encoding="utf-8")
    assert "# my notes setup" in text and "# easier on the eyes" in text
    data = tomllib.loads(text)
    assert data["tui"]["theme"] == "nord"
    assert data["vault"] == str(tmp_path / "vault")
    assert data["memory"]["search"]["provider"] == "none"


def test_check_gguf(tmp_path: Path) -> None:
    model = write_tiny_gguf(tmp_path / "tiny.gguf", name="tiny-embeddinggemma")
    good = check_gguf(str(model))
    assert good.ok and good.path == model
    assert good.message == "tiny.gguf: tiny-embeddinggemma, 32 dimensions."
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all")
    assert not check_gguf(str(junk)).ok
    assert not check_gguf(str(tmp_path / "absent.gguf")).ok
    assert not check_gguf("").ok


def test_detect_hardware_agrees_with_the_llama_cpp_build() -> None:
    # The expectation comes from the build's backend libraries, not the call the code makes.
    hardware = detect_hardware()
    assert hardware.gpu_offload is build_offloads(), backend_libraries()
    assert hardware.cpu_count == os.cpu_count()
    if build_offloads():
        assert hardware.summary == "GPU found: the model runs on the GPU (fast)."
    else:
        assert hardware.summary.startswith(
            f"No GPU offload in this llama.cpp build: the model runs on {os.cpu_count()} CPU"
        )


def test_llama_cpp_reports_the_offload_its_build_has() -> None:
    import llama_cpp

    # What every GPU report of Apus rests on: the build's own answer matches its libraries.
    assert bool(llama_cpp.llama_supports_gpu_offload()) is build_offloads(), backend_libraries()


def test_a_pasted_key_is_written_with_owner_only_permissions_and_kept_so(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('# mine\n[tui]\ntheme = "nord"\n', encoding="utf-8")
    config.chmod(0o644)
    key = "sk-proj-DOMAINkey000000000000000000000"
    choices = SetupChoices(
        tmp_path / "vault", "openai", model="text-embedding-3-small", api_key=key
    )
    assert key not in repr(choices)
    save_choices(choices, config_file=config)
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    data = tomllib.loads(config.read_text(encoding="utf-8"))
    assert data["memory"]["search"]["remote"]["apiKey"] == key
    assert config.read_text(encoding="utf-8").startswith("# mine")
    # A later save without a key keeps the file private (it still holds other secrets).
    save_choices(SetupChoices(tmp_path / "vault", "none"), config_file=config)
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


def test_the_key_variable_is_named_and_whether_it_is_set() -> None:
    gemini = next(c for c in PROVIDER_CHOICES if c.name == "gemini")
    unset = key_in_environment(gemini, {})
    assert unset.summary == "GEMINI_API_KEY or GOOGLE_API_KEY is not set in this environment."
    second = key_in_environment(gemini, {"GEMINI_API_KEY": " ", "GOOGLE_API_KEY": "AIza-x"})
    assert second.found == "GOOGLE_API_KEY"
    assert second.summary == "GOOGLE_API_KEY is set in this environment."
    bedrock = next(c for c in PROVIDER_CHOICES if c.name == "bedrock")
    assert key_in_environment(bedrock, {}).summary == ""
