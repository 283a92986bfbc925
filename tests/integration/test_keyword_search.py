"""Keyword search end to end: folding, CJK bigrams, filename tiers, snippets, line ranges."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from apus.config import Settings
from apus.search.query import EmptyQueryError
from apus.vault.text import fold
from support.vaults import make_settings, search, search_paths, sync, vault_digest, write_note


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _indexed(vault: Path) -> Settings:
    settings = make_settings(vault)
    report = sync(settings)
    assert report.skipped == []
    return settings


def test_nfc_and_nfd_spellings_find_each_other(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "menu.md", "# Menu\n\nA café crème at the corner, says the waiter.\n")
    nfd_text = _nfd("# Coin\n\nLe café du coin sert une crème brûlée.\n")
    write_note(vault, "coin.md", nfd_text)
    write_note(vault, "tea.md", "# Tea\n\nThe tea house has no espresso machine.\n")
    before = vault_digest(vault)
    settings = _indexed(vault)

    for query in ("café", _nfd("café"), "CAFÉ", "cafe"):
        assert set(search_paths(settings, query)) == {"menu.md", "coin.md"}, query
    assert search_paths(settings, "brûlée") == ["coin.md"]
    assert search_paths(settings, _nfd("brûlée")) == ["coin.md"]
    assert set(search_paths(settings, _nfd("crème"))) == {"menu.md", "coin.md"}

    [hit] = [h for h in search(settings, "café") if h.path == "coin.md"]
    spans = [hit.snippet[start:end] for start, end in hit.highlights]
    assert [unicodedata.normalize("NFC", s) for s in spans] == ["café"]
    # The notes are read, never rewritten: the decomposed spelling stays on disk.
    assert (vault / "coin.md").read_text(encoding="utf-8") == nfd_text
    assert vault_digest(vault) == before


def test_cjk_partial_queries(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "zh.md", "# 旅行\n\n我们明年秋天去北京旅行，参观故宫和长城。\n")
    write_note(vault, "ja.md", "# メモ\n\n東京駅の近くのホテルに泊まる予定です。\n")
    write_note(vault, "ko.md", "# 공부\n\n한국어를 공부하고 있어요.\n")
    write_note(vault, "en.md", "# Travel\n\nA trip to Beijing and Tokyo next year.\n")
    settings = _indexed(vault)

    expected = {
        "北京": "zh.md",
        "故宫": "zh.md",
        "北京旅行": "zh.md",
        "参观故宫": "zh.md",
        "長城": None,  # traditional spelling: a different character, no match
        "上海": None,
        "東京": "ja.md",
        "京駅": "ja.md",
        "ホテル": "ja.md",
        "泊まる": "ja.md",
        "한국어": "ko.md",
        "공부": "ko.md",
    }
    for query, path in expected.items():
        assert search_paths(settings, query) == ([path] if path else []), query

    [hit] = search(settings, "故宫")
    assert [hit.snippet[s:e] for s, e in hit.highlights] == ["故宫"]
    # Mixed scripts in one query: each part finds its note.
    assert set(search_paths(settings, "東京 Beijing")) == {"ja.md", "en.md"}


TIER_NOTES = {
    # Named like the query, but the body never says it.
    "roadmap.md": "# Q3\n\nShip the importer, hire two people.\n",
    "plans/roadmap.md": "# Plans\n\nA short list of goals for next year.\n",
    "old/roadmap.md.md": "# Old\n\nWhat we wanted last year.\n",
    "archive/roadmap.md-backup.md": "# Backup\n\nA copy kept for reference.\n",
    # Says it all the time, in the title and the body: the best BM25 match by far.
    "notes/heavy.md": "# Roadmap md\n\n" + "The roadmap (roadmap.md) is the roadmap. " * 30,
    "notes/unrelated.md": "# Other\n\nNothing to do with planning.\n",
}


def test_filename_tiers_rank_ahead_of_body_relevance(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for rel, text in TIER_NOTES.items():
        write_note(vault, rel, text)
    settings = _indexed(vault)

    hits = search(settings, "roadmap.md", limit=10, mmr=False)
    assert [hit.path for hit in hits] == [
        "roadmap.md",  # exact relative path
        "plans/roadmap.md",  # basename
        "old/roadmap.md.md",  # stem
        "archive/roadmap.md-backup.md",  # partial path
        "notes/heavy.md",  # body only
    ]
    assert [hit.explain.tier for hit in hits] == ["exact", "basename", "stem", "partial", "none"]
    # Without the tiers the body-heavy note would have won.
    heavy = hits[-1].explain.text_raw
    assert heavy is not None
    assert all(hit.explain.text_raw is None or hit.explain.text_raw < heavy for hit in hits[:-1])

    assert search_paths(settings, "plans/roadmap.md")[0] == "plans/roadmap.md"
    tiers = [(hit.path, hit.explain.tier) for hit in search(settings, "ROADMAP", mmr=False)]
    assert set(tiers[:2]) == {("roadmap.md", "stem"), ("plans/roadmap.md", "stem")}
    assert set(tiers[2:4]) == {
        ("old/roadmap.md.md", "partial"),
        ("archive/roadmap.md-backup.md", "partial"),
    }
    assert tiers[4:] == [("notes/heavy.md", "none")]


def test_filename_tiers_with_accents_and_cjk(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, _nfd("notes/déjà vu.md"), "# Again\n\nThe dodo returns.\n")
    write_note(vault, "languages/東京メモ.md", "# Trip\n\nHotel near the station.\n")
    write_note(vault, "other.md", "# Other\n\nDéjà vu, said the note about 東京メモ.\n")
    settings = _indexed(vault)
    expected = {
        "notes/déjà vu.md": (_nfd("notes/déjà vu.md"), "exact"),
        "notes\\déjà vu.md": (_nfd("notes/déjà vu.md"), "exact"),  # typed with a backslash
        "déjà vu.md": (_nfd("notes/déjà vu.md"), "basename"),
        "deja vu": (_nfd("notes/déjà vu.md"), "stem"),
        "東京メモ.md": ("languages/東京メモ.md", "basename"),
        "東京メモ": ("languages/東京メモ.md", "stem"),
    }
    for query, (path, tier) in expected.items():
        hits = search(settings, query)
        assert (hits[0].path, hits[0].explain.tier) == (path, tier), query
        assert "other.md" in [hit.path for hit in hits[1:]], query


def test_snippets_show_the_matched_terms(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    filler = "Ordinary words about the garden, the weather and the week ahead. " * 12
    write_note(
        vault,
        "long.md",
        f"# Diary\n\n{filler}\n\nThen the Pangolin arrived,\n   quite   late.\n\n{filler}\n",
    )
    settings = _indexed(vault)
    hits = search(settings, "pangolin")
    assert hits  # overlapping chunks may both hold the sentence
    for hit in hits:
        assert "Pangolin arrived, quite late." in hit.snippet  # whitespace collapsed
        assert "\n" not in hit.snippet
        assert [hit.snippet[s:e] for s, e in hit.highlights] == ["Pangolin"]
    [first] = [hit for hit in hits if hit.start_line == 1]
    assert first.snippet.startswith("…")  # the window moved on to the match

    for hit in search(settings, "pangolin late"):
        assert sorted(fold(hit.snippet[s:e]) for s, e in hit.highlights) == ["late", "pangolin"]


def test_line_ranges_point_at_the_passage(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    lines = ["---", "title: Field log", "importance: 6", "---", "", "# Field log", ""]
    for week in range(1, 60):
        lines += [f"## Week {week}", "", f"Counted birds along the dyke in week {week}.", ""]
    lines[lines.index("Counted birds along the dyke in week 47.")] = (
        "Counted birds along the dyke in week 47, and one hoopoe."
    )
    text = "\n".join(lines) + "\n"
    write_note(vault, "log.md", text)
    settings = _indexed(vault)

    [hit] = search(settings, "hoopoe")
    file_lines = text.splitlines()
    target = next(i for i, line in enumerate(file_lines, start=1) if "hoopoe" in line)
    assert hit.start_line <= target <= hit.end_line
    assert hit.start_line > 7  # a later chunk, not the note's start
    assert hit.heading.startswith("Field log > Week ")
    assert hit.title == "Field log"
    passage = "\n".join(file_lines[hit.start_line - 1 : hit.end_line])
    assert "hoopoe" in passage


def test_frontmatter_is_not_body_but_the_title_counts(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(
        vault,
        "meta.md",
        "---\ntitle: Quokka sightings\ntags: [wombat]\ntriggers:\n  - numbat census\n---\n\n"
        "Nothing else here.\n",
    )
    settings = _indexed(vault)
    assert search_paths(settings, "quokka") == ["meta.md"]
    assert search_paths(settings, "wombat") == []
    assert search_paths(settings, "numbat") == []


def test_limit_and_no_match(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for i in range(8):
        write_note(vault, f"n{i}.md", f"# Note {i}\n\nThe heron stood still ({i}).\n")
    settings = _indexed(vault)
    assert len(search_paths(settings, "heron", limit=3)) == 3
    assert len(search_paths(settings, "heron", limit=20)) == 8
    assert search_paths(settings, "xylophone") == []
    # A blank query is refused with the fix, not answered with nothing.
    with pytest.raises(EmptyQueryError, match="nothing to search for"):
        search_paths(settings, "   ")


def test_english_word_forms_find_each_other(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "herons.md", "# Herons\n\nTwo studies of grey herons feeding at dawn.\n")
    write_note(vault, "waders.md", "# Waders\n\nThe curlew ran along the mudflat.\n")
    write_note(vault, "menu.md", "# Menu\n\nA café crème at the corner.\n")
    settings = _indexed(vault)
    assert search_paths(settings, "study heron feed") == ["herons.md"]
    assert search_paths(settings, "Studied HERONS") == ["herons.md"]
    assert search_paths(settings, "curlews") == ["waders.md"]
    assert search_paths(settings, _nfd("cafés crèmes")) == ["menu.md"]


def test_exact_identifiers_rank_their_notes_first(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "runbook.md", "# Runbook\n\nSince JIRA-4821 the pool is capped at 40.\n")
    write_note(vault, "sidecar.md", "# Sidecar\n\nJIRA-5107 tracks the native sidecar.\n")
    write_note(vault, "manual.md", "# Manual\n\nSee page 4821 of the manual for the pool.\n")
    write_note(
        vault,
        "ssh.md",
        "# SSH\n\n```\nHost gateway-host\n  HostName 10.0.0.1\n  User admin\n```\n",
    )
    write_note(
        vault,
        "network.md",
        "# Network\n\nThe router is the gateway for the flat; every host on the LAN gets its "
        "address from it, and the printer, the laptops and the phones all hang off it too.\n",
    )
    settings = _indexed(vault)
    assert search_paths(settings, "JIRA-4821")[0] == "runbook.md"
    assert set(search_paths(settings, "JIRA-4821")) == {"runbook.md", "sidecar.md", "manual.md"}
    assert search_paths(settings, "jira-4821")[0] == "runbook.md"
    assert search_paths(settings, "gateway-host")[0] == "ssh.md"


# Realistic questions against the bundled sample vault, and the note a person expects.
SAMPLE_QUERIES = [
    # MEMORY.md's own entry says when the starter is fed: the agent's word comes first.
    ("sourdough starter feeding", "MEMORY.md"),
    ("pgbouncer ECONNREFUSED", None),  # checked below: the postmortem or MEMORY.md
    ("Tofu65 keyboard", "projects/keyboard-build.md"),
    ("k3s homelab", "projects/homelab-k3s.md"),
    ("故宫", "languages/北京旅行计划.md"),
    ("新宿", "languages/東京メモ.md"),
    ("Café Oudegracht", "notes/cafe-list.md"),
    ("2026-10-07", "daily/2026-10-07.md"),
    ("MEMORY.md", "MEMORY.md"),
    ("ssh-config", "notes/ssh-config.md"),
]


@pytest.mark.parametrize("nfd_query", [False, True], ids=["nfc", "nfd"])
def test_sample_vault_answers_realistic_queries(sample_vault: Path, nfd_query: bool) -> None:
    settings = make_settings(sample_vault)
    report = sync(settings)
    notes = [p for p in sample_vault.rglob("*") if p.suffix in (".md", ".markdown")]
    assert report.files == len(notes)
    assert report.skipped == []
    for query, expected in SAMPLE_QUERIES:
        if nfd_query:
            query = _nfd(query)
        paths = search_paths(settings, query, limit=5)
        if expected is None:
            assert {"daily/2026-11-06-postmortem.md", "MEMORY.md"} & set(paths[:3]), query
        else:
            assert paths and paths[0] == expected, (query, paths)
