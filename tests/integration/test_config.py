"""Settings layering (defaults < config.toml < APUS_* env < flags) and clear config errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from apus import paths
from apus.config import load_settings, update_config_file
from apus.errors import ConfigError
from support.vaults import cli_env, run_apus, run_json

LAYERED_FILE = """\
# my settings
vault = "{vault}"

[memory.search]
provider = "local"
model = "from-the-file"

[memory.search.chunking]
tokens = 300

[memory.search.query]
maxResults = 5
candidates = 50

[memory.search.query.hybrid]
vectorWeight = 0.5

[memory.search.query.hybrid.mmr]
lambda = 0.4
"""


def test_defaults_without_file_or_environment(tmp_path: Path) -> None:
    settings = load_settings(config_file=tmp_path / "absent.toml", environ={})
    search = settings.search
    assert settings.vault == ""
    assert search.provider == "auto"
    assert search.fallback == "keyword"
    assert (search.chunking.tokens, search.chunking.overlap) == (400, 80)
    assert search.query.max_results == 10
    assert search.query.min_score == 0.35
    # Unset: the merge weighs the legs by the embedding model's family.
    assert (search.query.hybrid.vector_weight, search.query.hybrid.text_weight) == (None, None)
    assert search.query.hybrid.mmr.lambda_ == 0.7
    assert search.query.hybrid.temporal_decay.half_life_days == 30.0
    assert search.sync.max_file_bytes == 5 * 1024 * 1024
    assert search.extra_paths == ()


def test_file_then_environment_then_flags(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(LAYERED_FILE.format(vault=tmp_path / "file-vault"), encoding="utf-8")

    from_file = load_settings(config_file=config, environ={})
    assert from_file.search.provider == "local"
    assert from_file.search.model == "from-the-file"
    assert from_file.search.chunking.tokens == 300
    assert from_file.search.chunking.overlap == 80  # untouched keys keep their defaults
    assert from_file.search.query.max_results == 5
    assert from_file.search.query.hybrid.vector_weight == 0.5
    assert from_file.search.query.hybrid.mmr.lambda_ == 0.4

    environ = {
        "APUS_MEMORY__SEARCH__PROVIDER": "none",
        "APUS_MEMORY__SEARCH__QUERY__MAXRESULTS": "7",
        "APUS_MEMORY__SEARCH__QUERY__HYBRID__ENABLED": "false",
        "APUS_MEMORY__SEARCH__EXTRAPATHS": '["../shared", "inbox"]',
        "APUS_MEMORY__SEARCH__SYNC__MAX_FILE_BYTES": "4096",
        "APUS_UNRELATED": "ignored: no section separator",
    }
    from_env = load_settings(config_file=config, environ=environ)
    assert from_env.search.provider == "none"
    assert from_env.search.query.max_results == 7
    assert from_env.search.query.hybrid.enabled is False
    assert from_env.search.extra_paths == ("../shared", "inbox")
    assert from_env.search.sync.max_file_bytes == 4096
    assert from_env.search.query.candidates == 50  # still from the file
    assert from_env.search.model == "from-the-file"

    from_flags = load_settings(
        config_file=config,
        environ=environ,
        overrides={"memory.search.query.maxResults": 3, "vault": str(tmp_path / "flag-vault")},
    )
    assert from_flags.search.query.max_results == 3
    assert from_flags.vault == str(tmp_path / "flag-vault")
    assert from_flags.search.provider == "none"


@pytest.mark.parametrize(
    ("text", "key", "line", "words"),
    [
        (
            '[memory.search]\nprovider = "local"\n\n[memory.search.query]\nmaxResults = "many"\n',
            "memory.search.query.maxResults",
            5,
            "integer",
        ),
        (
            'vault = "x"\n[memory.search]\nprovidr = "none"\n',
            "memory.search.providr",
            3,
            "unknown key",
        ),
        (
            "[memory.search.chunking]\noverlap = 10\ntokens = 5\n",
            "memory.search.chunking.tokens",
            3,
            "greater than or equal to 32",
        ),
        (
            '# top\nmemory.search.provider = "bogus"\n',
            "memory.search.provider",
            2,
            "unknown embedding provider 'bogus'; built in: auto, local, none,",
        ),
        ('[memory]\n[memry.search]\nprovider = "none"\n', "memry", 2, "unknown key"),
    ],
    ids=["wrong-type", "unknown-key", "out-of-range", "bad-choice-dotted", "unknown-table"],
)
def test_invalid_file_names_the_key_and_line(
    tmp_path: Path, text: str, key: str, line: int, words: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(config_file=config, environ={})
    message = str(caught.value)
    assert f"`{key}`" in message
    assert f"{config}, line {line}" in message
    assert words and words in message
    assert caught.value.fix


def test_toml_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('vault = "x"\n[memory.search\nprovider = "none"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(config_file=config, environ={})
    assert "not valid TOML" in caught.value.reason
    assert str(config) in caught.value.reason
    assert "line 2" in caught.value.reason


def test_invalid_environment_values_are_named(tmp_path: Path) -> None:
    absent = tmp_path / "absent.toml"
    with pytest.raises(ConfigError) as bad_value:
        load_settings(config_file=absent, environ={"APUS_MEMORY__SEARCH__PROVIDER": "bogus"})
    assert "`memory.search.provider`" in bad_value.value.reason
    assert "APUS_* environment" in bad_value.value.reason

    with pytest.raises(ConfigError) as bad_key:
        load_settings(config_file=absent, environ={"APUS_MEMORY__SEARCH__PROVIDR": "none"})
    assert "APUS_MEMORY__SEARCH__PROVIDR" in bad_key.value.reason


def test_update_config_file_keeps_comments_and_refuses_bad_values(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    original = '# keep me\n[memory.search]\nprovider = "auto"  # inline too\n'
    config.write_text(original, encoding="utf-8")
    update_config_file({"memory.search.provider": "none", "vault": "/notes"}, config_file=config)
    text = config.read_text(encoding="utf-8")
    assert "# keep me" in text
    assert "# inline too" in text
    settings = load_settings(config_file=config, environ={})
    assert settings.search.provider == "none"
    assert settings.vault == "/notes"

    before = config.read_bytes()
    with pytest.raises(ConfigError):
        update_config_file({"memory.search.query.maxResults": "lots"}, config_file=config)
    assert config.read_bytes() == before


# -- through the real CLI ----------------------------------------------------------------


def _folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    folders = tuple(tmp_path / name for name in ("file-vault", "env-vault", "flag-vault"))
    for folder in folders:
        folder.mkdir()
    return folders  # type: ignore[return-value]


def test_cli_vault_precedence_config_env_flag(tmp_path: Path) -> None:
    file_vault, env_vault, flag_vault = _folders(tmp_path)
    config = paths.config_file()  # the isolated XDG config dir
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'vault = "{file_vault}"\n', encoding="utf-8")

    assert run_json("memory", "status", "--json")["vault"] == str(file_vault)
    env = cli_env(APUS_VAULT=str(env_vault))
    assert run_json("memory", "status", "--json", env=env)["vault"] == str(env_vault)
    flagged = run_json("--vault", flag_vault, "memory", "status", "--json", env=env)
    assert flagged["vault"] == str(flag_vault)


def test_cli_provider_from_environment_beats_file(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    config = tmp_path / "custom.toml"
    config.write_text(f'vault = "{vault}"\n[memory.search]\nprovider = "local"\n', "utf-8")
    status = run_json("--config", config, "memory", "status", "--json")
    assert status["provider"] == "none"
    assert status["vault"] == str(vault)
    assert status["indexed"] is False


@pytest.mark.parametrize("how", ["flag", "env"])
def test_cli_reports_bad_config_without_traceback(tmp_path: Path, how: str) -> None:
    config = tmp_path / "broken.toml"
    config.write_text('[memory.search]\nprovider = "none"\nunknownThing = 1\n', "utf-8")
    args: list[str | Path] = ["--vault", tmp_path, "memory", "status"]
    if how == "flag":
        result = run_apus("--config", config, *args, expect=1)
    else:
        result = run_apus(*args, env=cli_env(APUS_CONFIG=str(config)), expect=1)
    assert "Traceback" not in result.stderr
    assert "`memory.search.unknownThing`" in result.stderr
    assert "line 3" in result.stderr
    assert "unknown key" in result.stderr
    assert "Fix:" in result.stderr


def test_cli_bad_environment_value_exits_cleanly(tmp_path: Path) -> None:
    env = cli_env(APUS_MEMORY__SEARCH__QUERY__MAXRESULTS="0")
    result = run_apus("--vault", tmp_path, "memory", "status", env=env, expect=1)
    assert "Traceback" not in result.stderr
    assert "`memory.search.query.maxResults`" in result.stderr
    assert "environment" in result.stderr


def test_cli_without_a_vault_says_how_to_pick_one() -> None:
    result = run_apus("memory", "status", expect=1)
    assert "No notes folder is configured" in result.stderr
    assert "--vault" in result.stderr
    assert "Traceback" not in result.stderr
