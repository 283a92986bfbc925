"""`apus doctor` against the real thing: the tiny GGUF in the managed server, a corrupt GGUF,
a damaged index. It reads and reports; it never repairs."""

from __future__ import annotations

import json
import os
import random
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from apus.index.store import Store
from support.llama_build import backend_libraries, build_offloads, cpu_features, cpu_has
from support.tiny_gguf import LAYERS
from support.vaults import index_vault, make_settings, run_apus, write_note

BIRDS = ("heron", "egret", "ibis", "stork", "crane", "bittern", "plover", "curlew", "dunlin")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    rng = random.Random(3)
    root = tmp_path / "vault"
    for number in range(40):
        body = " ".join(rng.choice(BIRDS) for _ in range(300))
        write_note(root, f"notes/n{number:03d}.md", f"# Note {number}\n\n{body}\n")
    return root


def local_env(model: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        APUS_MEMORY__SEARCH__PROVIDER="local", APUS_MEMORY__SEARCH__LOCAL__MODEL_PATH=str(model)
    )
    return env


def doctor(vault: Path, env: dict[str, str], expect: int) -> dict[str, dict[str, Any]]:
    result = run_apus("--vault", vault, "doctor", "--json", env=env, expect=expect)
    report = json.loads(result.stdout)
    checks = {check["name"]: check for check in report["checks"]}
    assert {"config", "vault", "index", "embedding"} <= set(checks)
    assert report["ok"] is (expect == 0)
    return checks


@pytest.mark.slow
def test_doctor_with_the_tiny_model_measures_a_real_embedding(
    vault: Path, tiny_model: Path
) -> None:
    env = local_env(tiny_model)
    run_apus("--vault", vault, "memory", "index", env=env)
    write_note(vault, "notes/late.md", "# Late\n\nA heron arrived after the index.\n")
    run_apus(
        "--vault", vault, "memory", "index", env={**env, "APUS_MEMORY__SEARCH__PROVIDER": "none"}
    )

    checks = doctor(vault, env, expect=0)
    assert checks["config"]["ok"] and "APUS_MEMORY__SEARCH__PROVIDER" in checks["config"]["detail"]
    assert checks["vault"]["notes"] == 41
    index = checks["index"]
    assert index["ok"] and index["quick_check"] == "ok" and index["keyword"] == "ok"
    assert index["vectors"]["store"] == index["vectors"]["faiss"] == 40
    embedding = checks["embedding"]
    assert embedding["ok"], embedding
    offloads = build_offloads()  # from the build's libraries, not the call the code makes
    assert (
        embedding["device"],
        embedding["gpu_offload"],
        embedding["gpu_layers"],
        embedding["offloaded_layers"],
        embedding["model_layers"],
    ) == (
        ("gpu", True, -1, LAYERS + 1, LAYERS + 1) if offloads else ("cpu", False, 0, 0, LAYERS + 1)
    ), backend_libraries()
    assert embedding["tokens_per_second"] > 0
    # llama.cpp's own line names the instruction sets its CPU backend was built for: each
    # is one this CPU has (the build never assumes more than the machine runs).
    built = cpu_features(embedding["system_info"])
    assert {"SSE3", "AVX"} & built or not Path("/proc/cpuinfo").exists(), built
    missing = [name for name in built if not cpu_has(name)]
    assert missing == [], embedding["system_info"]
    assert embedding["pending_chunks"] == 1 and embedding["pending_seconds"] is not None

    human = run_apus("--vault", vault, "doctor", env=env).stdout
    assert [line.split()[:2] for line in human.splitlines() if not line.startswith(" ")] == [
        ["ok", "config"],
        ["ok", "vault"],
        ["ok", "index"],
        ["ok", "sync"],
        ["ok", "embedding"],
    ]
    # The device and what llama.cpp did with the layers, beside the speed.
    where = (
        f"on gpu ({LAYERS + 1}/{LAYERS + 1} layers offloaded)"
        if offloads
        else ("on cpu (no GPU offload in this llama.cpp build)")
    )
    assert re.search(rf"{re.escape(where)}: [\d,]+ tokens/s", human), human

    # A vector file that went missing is found, with the command that rebuilds it.
    (make_settings(vault).index_dir() / "vectors.faiss").unlink()
    index = doctor(vault, env, expect=1)["index"]
    assert not index["ok"] and "vectors.faiss" in index["detail"]
    assert index["fix"] == "apus memory index"


def test_doctor_with_a_corrupt_gguf_fails_with_a_fix(
    vault: Path, tiny_model: Path, tmp_path: Path
) -> None:
    data = tiny_model.read_bytes()
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(data[: len(data) - 4096])  # header intact, tensor data cut short
    env = local_env(broken)
    embedding = doctor(vault, env, expect=1)["embedding"]
    assert not embedding["ok"]
    assert "while loading broken.gguf" in embedding["detail"]
    assert "apus models pull" in embedding["fix"]
    result = run_apus("--vault", vault, "doctor", env=env, expect=1)
    assert "FAIL embedding" in result.stdout and "Fix: apus models pull" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def test_doctor_finds_a_damaged_index_and_leaves_it_as_it_is(vault: Path) -> None:
    env = {**os.environ, "APUS_MEMORY__SEARCH__PROVIDER": "none"}
    index_vault(vault, env)
    db = make_settings(vault).index_dir() / Store.FILENAME
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    pages = db.stat().st_size // 4096
    with open(db, "r+b") as handle:
        handle.seek((pages // 2) * 4096)
        handle.write(random.Random(5).randbytes(4096))
    damaged = db.read_bytes()

    checks = doctor(vault, env, expect=1)
    index = checks["index"]
    assert not index["ok"] and index["quick_check"] != "ok"
    assert "the index database is damaged" in index["detail"]
    assert index["fix"] == "apus memory index --force"
    assert checks["embedding"]["ok"] and checks["embedding"]["provider"] == "none"
    assert db.read_bytes() == damaged  # reported, not repaired
    assert not list(db.parent.glob("apus.sqlite.damaged-*"))
