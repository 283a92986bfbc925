"""The real `apus` command line against fake hosted services: index, search and
`status --deep` work, a wrong key makes search report the provider unavailable, and the key
appears in nothing Apus prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.fake_service import Reply

from .hosted import HARNESSES, Harness

APUS = [sys.executable, "-c", "import sys; from apus.cli import main; sys.exit(main())"]
NOTES = {
    "garden.md": "# Garden\n\nPlant tomatoes in May, after the last frost.\n",
    "errands.md": "# Errands\n\nBuy coffee beans and oat milk on Friday.\n",
    "router.md": "# Router\n\nThe wifi password is on a card in the hallway drawer.\n",
}


def apus(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*APUS, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def cli_env(tmp_path: Path, harness: Harness, fake: Any, key: str) -> dict[str, str]:
    vault = tmp_path / "vault"
    vault.mkdir(exist_ok=True)
    for name, text in NOTES.items():
        (vault / name).write_text(text, encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if not name.startswith("APUS_")}
    env.update(harness.env(fake, key))
    env.update(
        APUS_VAULT=str(vault),
        APUS_MEMORY__SEARCH__PROVIDER=harness.provider,
        APUS_MEMORY__SEARCH__OUTPUTDIMENSIONALITY="8",
        APUS_MEMORY__SEARCH__REMOTE__BASEURL=harness.base_url(fake),
    )
    return env


def printed(*results: subprocess.CompletedProcess[str]) -> str:
    return "".join(result.stdout + result.stderr for result in results)


@pytest.mark.parametrize("provider", sorted(HARNESSES))
def test_index_search_and_deep_status_through_the_cli(provider: str, tmp_path: Path) -> None:
    harness = HARNESSES[provider]
    with harness.fake() as fake:
        env = cli_env(tmp_path, harness, fake, harness.secret)
        # A rate limit mid-index is waited out as the service asks.
        fake.fail(harness.marker, Reply(429, {"message": "slow down"}, {"Retry-After": "1"}))
        index = apus(env, "memory", "index", "--json")
        search = apus(env, "memory", "search", "where is the wifi password", "--json")
        status = apus(env, "memory", "status", "--deep", "--json")
    assert index.returncode == 0, index.stderr
    report = json.loads(index.stdout)
    assert report["embedded"] >= 3 and not report["embed_error"]
    assert search.returncode == 0, search.stderr
    answer = json.loads(search.stdout)
    assert answer["legs"]["vector"]["ran"] is True
    assert answer["results"][0]["path"] == "router.md"
    embeddings = json.loads(status.stdout)["embeddings"]
    assert embeddings["state"] == "ready"
    assert (embeddings["provider"], embeddings["dims"]) == (provider, 8)
    assert embeddings["probe"]["ok"] is True
    assert embeddings["describe"]["endpoint"].startswith(fake.url)
    assert harness.secret not in printed(index, search, status)


@pytest.mark.parametrize("provider", sorted(HARNESSES))
def test_a_wrong_key_makes_search_report_the_provider_unavailable(
    provider: str, tmp_path: Path
) -> None:
    harness = HARNESSES[provider]
    wrong = harness.secret[:-6] + "WRONG0"
    with harness.fake() as fake:
        good = cli_env(tmp_path, harness, fake, harness.secret)
        assert apus(good, "memory", "index", "--json").returncode == 0
        bad = cli_env(tmp_path, harness, fake, wrong)
        search = apus(bad, "memory", "search", "wifi password", "--json")
        status = apus(bad, "memory", "status", "--deep", "--json")
        index = apus(bad, "memory", "index", "--reembed", "--json")
    assert search.returncode == 1
    assert "is unavailable" in search.stderr and "refused the credentials" in search.stderr
    assert "Fix:" in search.stderr
    probe = json.loads(status.stdout)["embeddings"]["probe"]
    assert probe["ok"] is False and "refused the credentials" in probe["error"]
    # Keyword data is still written; the distinct exit status says embeddings are not.
    assert index.returncode == 3
    written = json.loads(index.stdout)
    assert written["files"] > 0 and written["embedding"]["state"] == "failed"
    assert "refused the credentials" in written["embed_error"]
    for secret in (wrong, harness.secret):
        assert secret not in printed(search, status, index)


def test_a_key_in_config_toml_is_used_and_never_printed(tmp_path: Path) -> None:
    harness = HARNESSES["openai"]
    with harness.fake() as fake:
        env = cli_env(tmp_path, harness, fake, "")
        del env["OPENAI_API_KEY"]
        config = tmp_path / "config.toml"
        config.write_text(
            f'[memory.search.remote]\napiKey = "{harness.secret}"\n', encoding="utf-8"
        )
        env["APUS_CONFIG"] = str(config)
        index = apus(env, "memory", "index", "--json")
        status = apus(env, "memory", "status", "--deep", "--json")
    assert index.returncode == 0, index.stderr
    described = json.loads(status.stdout)["embeddings"]["describe"]
    assert described["key"] == "memory.search.remote.apiKey"
    assert harness.secret not in printed(index, status)
