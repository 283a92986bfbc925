"""`apus eval --decisions`: documents mixed with the entries an agent wrote, asked the way a
user asks later; the entries land where the writer puts them, and the figures come per
setting and half."""

from __future__ import annotations

from pathlib import Path

import pytest

from apus.benchmarks.beir import eval_settings
from apus.benchmarks.decisions import TODAY, select, write_decisions
from apus.benchmarks.decisions_data import DECISIONS
from support.vaults import run_json, write_note

# Documents that share the questions' words: the entries compete with them.
DOCS = {
    "restic.md": "# restic\n\n> Back up a server every night to a NAS or the cloud.\n",
    "rsync.md": "# rsync\n\n> Copy files to a home server; often used to back up.\n",
    "psql.md": "# psql\n\n> Upgrade and query the production database.\n",
    "ssh.md": "# ssh\n\n> Log into servers with a password or a key.\n",
}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    for name, text in DOCS.items():
        write_note(root, name, text)
    return root


def test_the_entries_are_written_as_an_agent_writes_them(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    settings = eval_settings(vault, tmp_path / "index", "", "", {"memory.write.enabled": True})
    written = write_decisions(settings, tmp_path)
    assert len(written) == len(DECISIONS) == 60
    memory = (vault / "MEMORY.md").read_text(encoding="utf-8").splitlines()
    first = next(w for w in written if w.path == "MEMORY.md")
    # The entry's lines: its heading (the day it was written), importance, then its text.
    entry = memory[first.start_line - 1 : first.end_line]
    day = TODAY.toordinal() - first.decision.days_ago
    assert entry[0].startswith(f"## {type(TODAY).fromordinal(day).isoformat()}")
    assert entry[1] == f"<!-- importance: {first.decision.importance} -->"
    assert entry[2] == first.decision.text
    daily = [w for w in written if w.decision.target == "daily"]
    assert daily and all(w.path.startswith("memory/") for w in daily)
    assert [w.number for w in select(written, "odd")] == list(range(1, 61, 2))


def test_eval_decisions_prints_hits_per_setting(docs: Path) -> None:
    data = run_json(
        "eval", "--decisions", docs, "--split", "odd", "--set", "curatedWeight=3", "--json"
    )
    assert data["document_count"] == len(DOCS) and data["split"] == "odd"
    defaults, weighted = data["runs"]
    assert weighted["overrides"] == {"memory.search.query.curatedWeight": 3}
    for run in (defaults, weighted):
        (keyword,) = run["modes"]
        assert keyword["mode"] == "keyword" and keyword["questions"] == 30
        assert 0 <= keyword["hit_at_1"] <= keyword["hit_at_3"] <= keyword["hit_at_10"] <= 1
        assert set(keyword["hit_at_3_by_target"]) == {"MEMORY.md", "USER.md", "daily"}
    # The agent's own word, weighed up, is found at least as often at the top.
    assert weighted["modes"][0]["hit_at_1"] >= defaults["modes"][0]["hit_at_1"]
    # The documents are copied into the benchmark's vault; the folder given is not touched.
    assert {p.name: p.read_text(encoding="utf-8") for p in docs.iterdir()} == DOCS
