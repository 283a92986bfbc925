"""Settings sections read values as a lenient reader does, refuse the rest with a message that
names what was wanted, and take every key config.toml has always taken."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from pydantic.alias_generators import to_camel

from apus.config import (
    ChunkingSettings,
    HybridSettings,
    MmrSettings,
    RemoteSettings,
    SearchSettings,
    Settings,
    SyncSettings,
    TuiSettings,
    load_settings,
)
from apus.config_model import Section, SettingError, fields_of


@pytest.mark.parametrize(
    ("section", "name", "given", "taken"),
    [
        (ChunkingSettings, "tokens", "300", 300),
        (ChunkingSettings, "tokens", " 300 ", 300),
        (ChunkingSettings, "tokens", 300.0, 300),
        (ChunkingSettings, "tokens", "300.0", 300),
        (RemoteSettings, "timeout_seconds", 5, 5.0),
        (RemoteSettings, "timeout_seconds", "2.5", 2.5),
        (RemoteSettings, "timeout_seconds", "inf", math.inf),
        (SyncSettings, "watch", "yes", True),
        (SyncSettings, "watch", "Off", False),
        (SyncSettings, "watch", 1, True),
        (SyncSettings, "watch", 0.0, False),
        (SearchSettings, "extra_paths", ["a", "b"], ("a", "b")),
        (SearchSettings, "sources", ("memory", "sessions"), ("memory", "sessions")),
        (HybridSettings, "vector_weight", None, None),
        (HybridSettings, "vector_weight", 1, 1.0),
        (HybridSettings, "merge", "rrf", "rrf"),
        (TuiSettings, "keys", {"rebuild_index": "ctrl+r"}, {"rebuild_index": "ctrl+r"}),
    ],
)
def test_values_are_read_leniently(
    section: type[Section], name: str, given: object, taken: object
) -> None:
    value = getattr(section(**{name: given}), name)
    assert value == taken and type(value) is type(taken)


@pytest.mark.parametrize(
    ("section", "name", "given", "message"),
    [
        (ChunkingSettings, "tokens", "many", "valid integer, unable to parse string"),
        (ChunkingSettings, "tokens", 300.5, "valid integer, got a number with a fractional"),
        (ChunkingSettings, "tokens", None, "Input should be a valid integer"),
        (ChunkingSettings, "tokens", 5, "Input should be greater than or equal to 32"),
        (ChunkingSettings, "tokens", 9000, "Input should be less than or equal to 8192"),
        (RemoteSettings, "timeout_seconds", 0, "Input should be greater than 0"),
        (RemoteSettings, "timeout_seconds", "soon", "valid number, unable to parse string"),
        (MmrSettings, "lambda_", 2, "Input should be less than or equal to 1"),
        (SyncSettings, "watch", "maybe", "valid boolean, unable to interpret input"),
        (SyncSettings, "watch", 2, "valid boolean, unable to interpret input"),
        (SearchSettings, "model", 5, "Input should be a valid string"),
        (SearchSettings, "extra_paths", "inbox", "Input should be a valid tuple"),
        (SearchSettings, "sources", ["notes"], "Input should be 'memory' or 'sessions'"),
        (HybridSettings, "merge", "sum", "Input should be 'weighted', 'zscore' or 'rrf'"),
        (SearchSettings, "local", 3, "valid dictionary or instance of LocalSettings"),
        (TuiSettings, "keys", ["ctrl+r"], "Input should be a valid dictionary"),
        (SearchSettings, "provider", "bogus", "unknown embedding provider 'bogus'"),
    ],
)
def test_values_that_cannot_be_read_are_refused(
    section: type[Section], name: str, given: object, message: str
) -> None:
    with pytest.raises(SettingError) as caught:
        section(**{name: given})
    assert message in caught.value.message
    assert caught.value.loc[0] == name


def test_keys_are_camel_case_or_snake_case_and_unknown_ones_are_refused() -> None:
    data: dict[str, Any] = {"memory": {"search": {"query": {"maxResults": 3, "min_score": 0.5}}}}
    query = Settings.from_mapping(data).search.query
    assert (query.max_results, query.min_score) == (3, 0.5)
    assert Settings.from_mapping({"memory": {"search": {"query": {"hybrid": {"mmr": {
        "lambda": 0.4}}}}}}).search.query.hybrid.mmr.lambda_ == 0.4  # fmt: skip
    with pytest.raises(SettingError) as unknown:
        Settings.from_mapping({"memory": {"search": {"providr": "none"}}})
    assert (unknown.value.loc, unknown.value.kind) == (
        ("memory", "search", "providr"),
        "extra_forbidden",
    )
    with pytest.raises(SettingError) as deep:
        Settings.from_mapping({"memory": {"search": {"sources": ["memory", "notes"]}}})
    assert deep.value.loc == ("memory", "search", "sources", 1)
    with pytest.raises(SettingError) as written:
        Settings.from_mapping({"memory": {"search": {"query": {"max_results": "x"}}}})
    assert written.value.loc == ("memory", "search", "query", "max_results")


def test_provider_entries_reach_the_search_section() -> None:
    entry = {"api": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "m"}
    data = {"models": {"providers": {"mine": entry}}, "memory": {"search": {"provider": "mine"}}}
    settings = Settings.from_mapping(data)
    assert settings.search.provider == "mine"
    assert settings.search.custom_providers["mine"].base_url == entry["baseUrl"]
    from_the_environment = Settings.from_mapping({"models": {"providers": {"mine": entry}}})
    assert from_the_environment.search.custom_providers == settings.search.custom_providers
    with pytest.raises(SettingError) as no_api:
        Settings.from_mapping({"models": {"providers": {"x": {"baseUrl": "u"}}}})
    assert "needs `api`" in no_api.value.message


def test_copies_are_checked_and_equality_ignores_the_found_index_folder(tmp_path: Path) -> None:
    remote = RemoteSettings(batch_size="16")  # type: ignore[arg-type]
    assert remote.batch_size == 16
    assert remote.model_copy(update={"max_retries": "2"}).max_retries == 2
    with pytest.raises(SettingError):
        remote.model_copy(update={"max_retries": 11})
    vault = tmp_path / "vault"
    vault.mkdir()
    absent = tmp_path / "absent.toml"
    first = load_settings(config_file=absent, environ={}, overrides={"vault": str(vault)})
    first.index_dir()
    assert first == load_settings(config_file=absent, environ={}, overrides={"vault": str(vault)})


def test_every_key_is_the_one_config_files_were_written_with() -> None:
    # The keys were pydantic's camelCase of each name: files and variables written for them
    # still read the same.
    def keys(section: type[Section]) -> list[tuple[str, str]]:
        found = []
        for spec in fields_of(section):
            if spec.name != "lambda_":  # `lambda` is named explicitly
                found.append((spec.key, to_camel(spec.name)))
            hint = spec.hint
            if isinstance(hint, type) and issubclass(hint, Section):
                found += keys(hint)
        return found

    pairs = keys(Settings)
    assert len(pairs) > 60
    assert [key for key, camel in pairs if key != camel] == []
