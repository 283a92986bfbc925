"""`apus sessions search|history` and `memory search --corpus` as a shell runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.transcripts import conversation, enabled_env, write_transcript
from support.vaults import cli_env, index_vault, run_apus, run_json, write_note


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    vault, agents = tmp_path / "vault", tmp_path / "agents"
    write_note(vault, "notes/deploy.md", "# Deploy\n\nThe blog deploys with make deploy.\n")
    write_transcript(
        agents,
        "main/older",
        conversation(
            "main/older", [("deploy the blog please", "Done: make deploy.")], day="2026-11-01"
        ),
    )
    write_transcript(
        agents,
        "main/newer",
        conversation(
            "main/newer",
            [("deploy the blog please", "Done again."), ("thanks", "Any time.")],
            day="2026-11-20",
            parent="older",
        ),
    )
    return vault, agents


def env_on(agents: Path, **extra: str) -> dict[str, str]:
    return cli_env(**enabled_env(agents, **extra))


def test_search_history_and_corpus(world: tuple[Path, Path]) -> None:
    vault, agents = world
    env = env_on(agents)
    index_vault(vault, env)

    found = run_json("--vault", vault, "sessions", "search", "deploy", "blog", "--json", env=env)
    results = found["results"]
    # The same message in two sessions: equal matches, the newer first.
    assert [(r["sessionKey"], r["role"]) for r in results[:2]] == [
        ("main/newer", "user"),
        ("main/older", "user"),
    ]
    first = results[0]
    assert set(first) == {"sessionKey", "timestamp", "role", "excerpt", "line"}
    assert first["timestamp"].startswith("2026-11-20T") and first["line"] == 2
    assert "deploy the blog" in first["excerpt"]

    window = run_json(
        "--vault", vault, "sessions", "history", "main/newer",
        "--around", first["timestamp"], "--limit", "2", "--json", env=env,
    )  # fmt: skip
    assert window["sessionKey"] == "main/newer" and window["parentSession"] == "main/older"
    assert [m["text"] for m in window["messages"]] == ["deploy the blog please", "Done again."]
    assert (window["total"], window["moreBefore"], window["moreAfter"]) == (4, False, True)
    text = run_apus("--vault", vault, "sessions", "history", "main/newer", env=env).stdout
    assert "Any time." in text

    default = run_json("--vault", vault, "memory", "search", "deploy", "--json", env=env)
    assert {hit["source"] for hit in default["results"]} == {"memory"}
    both = run_json(
        "--vault", vault, "memory", "search", "deploy", "--corpus", "all", "--json", env=env
    )
    assert {hit["source"] for hit in both["results"]} == {"memory", "sessions"}
    sessions = [hit for hit in both["results"] if hit["source"] == "sessions"]
    assert {hit["path"] for hit in sessions} == {"sessions:main/older", "sessions:main/newer"}

    status = run_json("--vault", vault, "memory", "status", "--json", env=env)
    assert status["files"] == 1
    assert (status["sessions"]["files"], status["sessions"]["messages"]) == (2, 6)


def test_visibility_from_the_command_line(world: tuple[Path, Path]) -> None:
    vault, agents = world
    env = env_on(agents, APUS_TOOLS__SESSIONS__VISIBILITY="tree")
    index_vault(vault, env)
    asked = run_apus("--vault", vault, "sessions", "search", "deploy", env=env, expect=1)
    assert "tools.sessions.visibility is 'tree'" in asked.stderr
    assert "Fix: pass the asking session" in asked.stderr
    # `newer` was spawned from `older`: older's tree holds both, newer's only itself.
    for session, keys in (
        ("main/older", {"main/older", "main/newer"}),
        ("main/newer", {"main/newer"}),
    ):
        found = run_json(
            "--vault", vault, "sessions", "search", "deploy", "--session", session, "--json",
            env=env,
        )  # fmt: skip
        assert {r["sessionKey"] for r in found["results"]} == keys
        hits = run_json(
            "--vault", vault, "memory", "search", "deploy", "--corpus", "sessions",
            "--session", session, "--json", env=env,
        )  # fmt: skip
        assert {hit["path"] for hit in hits["results"]} == {f"sessions:{k}" for k in keys}
    hidden = run_apus(
        "--vault", vault, "sessions", "history", "main/older", "--session", "main/newer",
        env=env, expect=1,
    )  # fmt: skip
    assert "No indexed session main/older is visible here." in hidden.stderr
    assert "Done: make deploy" not in hidden.stdout + hidden.stderr


def test_off_by_default_with_a_fix(world: tuple[Path, Path]) -> None:
    vault, agents = world
    env = cli_env(APUS_MEMORY__SEARCH__SESSIONS__PATHS=json.dumps([str(agents)]))
    index_vault(vault, env)
    refused = run_apus("--vault", vault, "sessions", "search", "deploy", env=env, expect=1)
    assert "Session transcripts are not indexed." in refused.stderr
    assert "sessionMemory = true" in refused.stderr
    # Not an empty list, which reads as "nothing about it": not searched, and why.
    off = run_apus(
        "--vault", vault, "memory", "search", "deploy", "--corpus", "sessions", "--json",
        env=env, expect=1,
    )  # fmt: skip
    assert "Session transcripts are not indexed" in off.stderr and "Fix:" in off.stderr
    status = run_json("--vault", vault, "memory", "status", "--json", env=env)
    assert status["sessions"]["enabled"] is False and status["sessions"]["files"] == 0
