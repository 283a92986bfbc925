"""Ranking end to end on vaults whose order is known in advance: decay, importance, tiers,
minScore, MMR, the two legs and their candidate budget, through the real Searcher."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner

from apus.cli import main
from apus.config import Settings, load_settings
from apus.embed.providers import resolve_provider
from apus.indexing.sync import Indexer
from apus.memory import Memory
from apus.search.engine import Searcher
from apus.search.options import SearchOptions
from apus.search.results import SearchHit, SearchResponse
from support.vaults import make_settings, run_apus, run_json, search_response, sync, write_note
from support.word_vector_leg import WordVectorLeg

# A fixed "today" for the Searcher, so the decay factors are exact whatever the date.
TODAY = dt.date(2025, 6, 15)
GREENHOUSE = "# Log\n\nRepaired the greenhouse heater valve.\n"
EXPLAIN_KEYS = {
    "vector_raw",
    "vector_norm",
    "text_raw",
    "text_norm",
    "merged",
    "recency",
    "recency_weight",
    "importance",
    "tier",
    "mmr_position",
    "rerank",  # the reranker's score and the relevance it made (None: not reranked)
    "reranked",
    "final",
    "diversity",
    "language",
    "curated",
}


def _indexed(vault: Path, **flags: object) -> Settings:
    settings = make_settings(vault, **flags)
    report = sync(settings)
    assert report.skipped == []
    return settings


def _search(settings: Settings, query: str, **options: object) -> SearchResponse:
    searcher = Searcher(settings, today=lambda: TODAY)
    try:
        return searcher.search(query, SearchOptions(**options))  # type: ignore[arg-type]
    finally:
        searcher.close()


def _by_path(hits: list[SearchHit]) -> dict[str, SearchHit]:
    by_path = {hit.path: hit for hit in hits}
    assert len(by_path) == len(hits), "one chunk per note expected in this vault"
    return by_path


def _cli(vault: Path, *args: str, **env: str) -> str:
    """`apus --vault VAULT memory ARGS` in process (embeddings off); its output."""
    runner = CliRunner(env={"APUS_MEMORY__SEARCH__PROVIDER": "none", **env})
    result = runner.invoke(main, ["--vault", str(vault), "memory", *args])
    assert result.exit_code == 0, result.output
    return result.output


def _days_ago(days: int) -> dt.date:
    return TODAY - dt.timedelta(days=days)


# -- recency -----------------------------------------------------------------------------


def test_recency_halves_every_30_days_and_memory_is_evergreen(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    today, old = f"daily/{TODAY}.md", f"daily/{_days_ago(60)}.md"
    month = f"journal/2025/{_days_ago(30)}-trip.md"  # a slug and a deeper folder still count
    for rel in (today, old, month, "MEMORY.md"):
        write_note(vault, rel, GREENHOUSE)
    settings = _indexed(vault)

    hits = _search(settings, "greenhouse heater").hits
    found = _by_path(hits)
    assert set(found) == {today, old, month, "MEMORY.md"}
    assert len({hit.explain.text_raw for hit in hits}) == 1  # same text: same BM25
    assert [hit.path for hit in hits][2:] == [month, old]
    assert found[today].explain.recency == 1.0
    assert found["MEMORY.md"].explain.recency == 1.0  # evergreen
    assert found[month].explain.recency == pytest.approx(0.5)
    assert found[old].explain.recency == pytest.approx(0.25)
    assert found[today].explain.final == 1.0
    # MEMORY.md never decays; as the agent's own memory it is weighed up (curatedWeight).
    assert found["MEMORY.md"].explain.curated == 1.5 and found[today].explain.curated == 1.0
    assert found["MEMORY.md"].explain.final == pytest.approx(1.5)
    # The shipped floor (0.9): a score keeps 0.9 + 0.1·decay of its relevance.
    assert found[month].explain.recency_weight == pytest.approx(0.95)
    assert found[month].explain.final / found[today].explain.final == pytest.approx(0.95)
    assert found[old].explain.final / found[today].explain.final == pytest.approx(0.925)
    # Four copies of one text: each below the first repeats it, and shows 0.7 of its score.
    assert hits[0].path == "MEMORY.md" and hits[0].score == 1.5
    for hit in hits[1:]:
        assert hit.explain.diversity == pytest.approx(0.7)
        assert hit.score == pytest.approx(0.7 * hit.explain.final, abs=1e-5)

    flat = _search(settings, "greenhouse heater", recency=False, mmr=False).hits
    assert len(flat) == 4
    assert {hit.score for hit in flat if hit.path != "MEMORY.md"} == {1.0}
    assert {hit.explain.recency for hit in flat} == {1.0}


def test_recency_follows_the_configured_half_life_and_switch(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, f"daily/{TODAY}.md", GREENHOUSE)
    write_note(vault, f"daily/{_days_ago(60)}.md", GREENHOUSE)
    slow = _indexed(vault, memory__search__query__hybrid__temporalDecay__halfLifeDays=60)
    found = _by_path(_search(slow, "greenhouse heater").hits)
    assert found[f"daily/{_days_ago(60)}.md"].explain.recency == pytest.approx(0.5)
    assert found[f"daily/{_days_ago(60)}.md"].explain.final == pytest.approx(0.95)

    # Floor 0 is the plain multiplication by the decay (the seed's literal rule).
    plain = make_settings(vault, memory__search__query__hybrid__temporalDecay__floor=0)
    found = _by_path(_search(plain, "greenhouse heater").hits)
    assert found[f"daily/{_days_ago(60)}.md"].explain.final == pytest.approx(0.25)

    off = make_settings(vault, memory__search__query__hybrid__temporalDecay__enabled=False)
    assert {hit.explain.final for hit in _search(off, "greenhouse heater").hits} == {1.0}


def test_an_old_note_that_answers_ranks_above_recent_notes_that_match_weakly(
    tmp_path: Path,
) -> None:
    """Two years of daily notes: the decision is in the oldest; recent notes mention one of
    the query's words each. Recency orders comparable matches, it does not bury the answer."""
    vault = tmp_path / "vault"
    answer = f"daily/{_days_ago(730)}.md"
    write_note(vault, answer, "# Standup\n\nWe decided the office VPN moves to WireGuard.\n")
    for days in range(1, 11):
        write_note(vault, f"daily/{_days_ago(days)}.md", f"# Day {days}\n\nThe office was quiet.\n")
    settings = _indexed(vault)

    hits = _search(settings, "what did we decide about the office VPN", mmr=False).hits
    assert hits[0].path == answer
    assert hits[0].explain.recency == pytest.approx(0.5 ** (730 / 30))
    assert hits[0].explain.recency_weight == pytest.approx(0.9, abs=1e-6)
    assert all(hit.score > 0 for hit in hits)
    # Among the weak matches (one word each, equally relevant) the newest comes first.
    weak = [hit.path for hit in hits[1:]]
    assert weak == sorted(weak, reverse=True)

    # The seed's literal multiplication is one setting away, and buries it as it did.
    plain = make_settings(vault, memory__search__query__hybrid__temporalDecay__floor=0)
    buried = _search(plain, "what did we decide about the office VPN", mmr=False).hits
    assert buried[-1].path == answer
    # Even decayed by 2^-24 the score still tells the result apart from nothing.
    assert 0 < buried[-1].score < 1e-6


def test_min_score_judges_relevance_not_age(tmp_path: Path) -> None:
    """A strong match from years ago passes a threshold its decayed score would not."""
    vault = tmp_path / "vault"
    old = f"daily/{_days_ago(900)}.md"
    write_note(vault, old, GREENHOUSE)
    write_note(vault, f"daily/{TODAY}.md", "# Today\n\nThe greenhouse door sticks.\n")
    plain = _indexed(vault, memory__search__query__hybrid__temporalDecay__floor=0)
    hits = _search(plain, "greenhouse heater valve", min_score=0.9, mmr=False).hits
    found = _by_path(hits)
    assert found[old].explain.merged == pytest.approx(1.0)
    assert found[old].score < 0.9  # decayed below the threshold...
    assert [hit.path for hit in hits] == [f"daily/{TODAY}.md", old]
    # ...yet it is the one result that passes it: with one slot, it is the answer (a
    # threshold on the decayed score would have filled that slot with today's weak match).
    (only,) = _search(plain, "greenhouse heater valve", min_score=0.9, mmr=False, limit=1).hits
    assert only.path == old


# -- importance --------------------------------------------------------------------------


def test_importance_multiplies_and_missing_or_invalid_is_neutral(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    body = "# Pump\n\nThe cistern pump hums at night.\n"
    write_note(vault, "notes/high.md", f"---\nimportance: 10\n---\n{body}")
    write_note(vault, "notes/plain.md", body)
    write_note(vault, "notes/low.md", f"---\nimportance: 1\n---\n{body}")
    write_note(vault, "notes/invalid.md", f"---\nimportance: 42\n---\n{body}")
    settings = _indexed(vault)

    hits = _search(settings, "cistern pump").hits
    assert len({hit.explain.text_raw for hit in hits}) == 1  # frontmatter is not searched
    paths = [hit.path for hit in hits]
    assert paths[0] == "notes/high.md"
    assert set(paths[1:3]) == {"notes/plain.md", "notes/invalid.md"}
    assert paths[3] == "notes/low.md"
    found = _by_path(hits)
    base = found["notes/plain.md"].explain.final
    assert base == 1.0
    assert found["notes/high.md"].explain.final / base == pytest.approx(1.25)
    assert found["notes/invalid.md"].explain.final / base == pytest.approx(1.0)
    assert found["notes/low.md"].explain.final / base == pytest.approx(0.8)
    assert [found[p].explain.importance for p in paths] == pytest.approx([1.25, 1.0, 1.0, 0.8])


# -- path tiers --------------------------------------------------------------------------

HEAVY = "# Apollo launch projects\n\n" + (
    "The apollo launch in projects/apollo-launch.md is the apollo launch. " * 30
)


@pytest.mark.parametrize(
    ("query", "tier"),
    [
        ("projects/apollo-launch.md", "exact"),
        ("PROJECTS/Apollo-Launch.MD", "exact"),
        ("./projects/apollo-launch.md", "exact"),
        ("apollo-launch.md", "basename"),
        ("apollo-launch", "stem"),
        ("projects/apollo", "partial"),
        ("Apollo Launch", "partial"),
    ],
)
def test_a_query_naming_the_file_beats_a_body_that_repeats_it(
    tmp_path: Path, query: str, tier: str
) -> None:
    vault = tmp_path / "vault"
    target = "projects/apollo-launch.md"
    write_note(vault, target, "# Countdown\n\nFuel checks start at dawn.\n")
    write_note(vault, "notes/heavy.md", HEAVY)
    write_note(vault, "notes/other.md", "# Other\n\nNothing here.\n")
    settings = _indexed(vault)

    hits = _search(settings, query).hits
    assert hits[0].path == target
    assert hits[0].explain.tier == tier
    assert "path" in hits[0].legs
    heavy = [hit for hit in hits if hit.path == "notes/heavy.md"]
    assert heavy and all(hit.explain.tier == "none" for hit in heavy)
    # The body-heavy note is the better keyword match and the better score: only the tier
    # puts the named note first, shown with the answer's best score.
    assert max(hit.explain.text_norm for hit in heavy) == 1.0
    assert hits[0].explain.text_norm < 1.0
    assert max(hit.explain.final for hit in heavy) > hits[0].explain.final
    assert hits[0].score == max(hit.score for hit in hits)


def test_tiers_order_exact_basename_stem_partial_with_mmr_on(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    notes = {
        "drafts/plan.md-v2.md": "partial",
        "old/plan.md.md": "stem",
        "work/plan.md": "basename",
        "plan.md": "exact",
    }
    for rel in notes:
        write_note(vault, rel, "# Quarter\n\nA few goals for the quarter.\n")
    write_note(vault, "notes/heavy.md", "# Plan md\n\n" + "The plan (plan.md) is the plan. " * 30)
    settings = _indexed(vault)

    hits = _search(settings, "plan.md").hits  # MMR on: it must not reorder the tiers
    assert [(hit.path, hit.explain.tier) for hit in hits[:4]] == [
        ("plan.md", "exact"),
        ("work/plan.md", "basename"),
        ("old/plan.md.md", "stem"),
        ("drafts/plan.md-v2.md", "partial"),
    ]
    assert {hit.path for hit in hits[4:]} == {"notes/heavy.md"}
    assert [hit.explain.mmr_position for hit in hits] == list(range(1, len(hits) + 1))


# -- minScore (keyword) ------------------------------------------------------------------


def test_min_score_keeps_keyword_matches_when_nothing_passes(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    # Dated a month back, so every score is decayed; minScore judges relevance before that.
    day = _days_ago(30)
    write_note(vault, f"daily/{day}-a.md", "# A\n\nThe kiln fired the kiln glaze twice.\n")
    write_note(vault, f"daily/{day}-b.md", "# B\n\nOne kiln, many pots, long shelves of clay.\n")
    write_note(vault, f"daily/{day}-c.md", "# C\n\nClay and more clay, a kiln at the back.\n")
    write_note(vault, "notes/unrelated.md", "# D\n\nNothing about pottery.\n")
    settings = _indexed(vault)

    everything = _search(settings, "kiln", mode="keyword", min_score=0.0, mmr=False).hits
    assert len(everything) == 3
    assert max(hit.score for hit in everything) == pytest.approx(0.95, abs=1e-5)
    strict = _search(settings, "kiln", mode="keyword", min_score=1.0, mmr=False).hits
    assert [(hit.path, hit.score) for hit in strict] == [
        (hit.path, hit.score) for hit in everything
    ]


# -- MMR ---------------------------------------------------------------------------------


def test_mmr_lifts_a_distinct_note_above_a_near_duplicate_and_shows_why(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    dup = "# Bread\n\nFeed the sourdough starter with flour and water every {} before work.\n"
    write_note(vault, "bread/morning.md", dup.format("morning"))
    write_note(vault, "bread/evening.md", dup.format("evening"))
    # Slightly less important, so by score alone it ranks below both duplicates.
    write_note(
        vault,
        "cheese/rind.md",
        "---\nimportance: 4\n---\n# Cheese\n\n"
        "A sourdough starter also helps wash the cheese rind in the cellar.\n",
    )
    settings = _indexed(vault)
    duplicates = {"bread/morning.md", "bread/evening.md"}

    plain = _search(settings, "sourdough starter", mmr=False).hits
    assert {hit.path for hit in plain[:2]} == duplicates
    assert plain[2].path == "cheese/rind.md"
    assert plain[2].score < min(hit.score for hit in plain[:2])
    assert [hit.explain.mmr_position for hit in plain] == [None, None, None]

    diverse = _search(settings, "sourdough starter").hits
    assert diverse[0].path in duplicates
    assert diverse[1].path == "cheese/rind.md"
    assert diverse[2].path in duplicates - {diverse[0].path}
    assert [hit.explain.mmr_position for hit in diverse] == [1, 2, 3]
    # Each score is the one the list is ordered by: the repeat shows what MMR left of it.
    finals = {hit.path: hit.explain.final for hit in diverse}
    assert finals == {hit.path: hit.score for hit in plain}
    assert [hit.score for hit in diverse] == sorted((h.score for h in diverse), reverse=True)
    assert diverse[2].score < finals[diverse[2].path]


@pytest.mark.parametrize("mmr", [True, False])
def test_snippets_of_translated_notes_mark_the_query_words(tmp_path: Path, mmr: bool) -> None:
    # Letters only (Cyrillic), CJK without marks (Korean, Japanese), marks (Devanagari,
    # decomposed kana) and an annotated chunk: each found its own way, all as the tokens
    # (a chunk's text starts with its heading; `starchive` holds `tar` but is not it).
    vault = tmp_path / "vault"
    write_note(vault, "ru.md", "# tar\n\nАрхив: tar создаёт архив, а starchive — нет. Архив!\n")
    write_note(vault, "ko.md", "# tar\n\n아카이브 만들기: tar 아카이브를 풀기\n")
    write_note(vault, "ja.md", "# tar\n\nアーカイブを作るtarコマンド、アーカイブ\n")
    write_note(vault, "hi.md", "# tar\n\nसंग्रह बनाएं: tar संग्रह\n")
    write_note(vault, "nfd.md", "# tar\n\nか\u3099 いど: tar が\n")
    write_note(vault, "note.md", "# tar\n\n<!-- importance: 3 -->\nАрхив tar\n")
    settings = _indexed(vault)
    marked = {
        "архив": {"ru.md": ["Архив", "архив", "Архив"], "note.md": ["Архив"]},
        "아카이브": {"ko.md": ["아카이브", "아카이브"]},
        "アーカイブ": {"ja.md": ["アーカイブ", "アーカイブ"]},
        "संग्रह": {"hi.md": ["संग्रह", "संग्रह"]},
        "が": {"nfd.md": ["か\u3099", "が"]},
        "tar": {path: ["tar", "tar"] for path in ("ru.md", "ko.md", "ja.md", "hi.md", "nfd.md")},
    }
    for query, expected in marked.items():
        hits = _search(settings, query, mmr=mmr).hits
        found = {hit.path: [hit.snippet[s:e] for s, e in hit.highlights] for hit in hits}
        for path, words in expected.items():
            assert found[path] == words, (query, path, hits)
    # The annotated chunk's snippet leaves the annotation out.
    note = next(h for h in _search(settings, "архив", mmr=mmr).hits if h.path == "note.md")
    assert note.snippet == "# tar Архив tar"


# -- legs without vectors ----------------------------------------------------------------


def test_keyword_only_says_why_the_vector_leg_did_not_run(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write_note(vault, "notes/heron.md", "# Heron\n\nA grey heron fishing at dawn.\n")
    settings = _indexed(vault)
    response = search_response(settings, "grey dawn", mode="hybrid")
    assert response.legs["keyword"].ran
    assert not response.legs["vector"].ran
    assert "none" in response.legs["vector"].reason
    assert [hit.legs for hit in response.hits] == [("keyword",)]
    assert response.hits[0].explain.vector_raw is None


def test_explain_through_the_cli(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    # The command decays from the real date: name the note a month before it.
    write_note(vault, f"daily/{dt.date.today() - dt.timedelta(days=30)}.md", GREENHOUSE)
    write_note(vault, "notes/valve.md", "---\nimportance: 10\n---\n" + GREENHOUSE)
    sync(make_settings(vault))

    data = run_json("--vault", vault, "memory", "search", "--explain", "--json", "greenhouse")
    assert data["legs"]["vector"]["ran"] is False
    assert data["legs"]["vector"]["reason"]
    assert data["legs"]["keyword"]["ran"] is True
    results = data["results"]
    assert results[0]["path"] == "notes/valve.md"
    for position, hit in enumerate(results, start=1):
        explain = hit["explain"]
        assert set(explain) == EXPLAIN_KEYS
        assert explain["mmr_position"] == position
        assert explain["final"] == pytest.approx(
            explain["merged"]
            * explain["recency_weight"]
            * explain["importance"]
            * explain["curated"]
            * explain["language"]
        )
        assert explain["language"] == 1.0  # one language: nothing to prefer
        assert hit["score"] == pytest.approx(explain["final"] * explain["diversity"], abs=1e-5)
    assert results[0]["explain"]["importance"] == pytest.approx(1.25)
    assert results[1]["explain"]["recency"] == pytest.approx(0.5)
    assert results[1]["explain"]["recency_weight"] == pytest.approx(0.95)
    plain = json.loads(_cli(vault, "search", "--json", "greenhouse"))
    assert all("explain" not in hit for hit in plain["results"])

    shown = _cli(vault, "search", "--explain", "greenhouse", COLUMNS="200")
    assert "vector search did not run" in shown
    for factor in ("merged", "× recency 0.950 (decay 0.500)", "× importance 1.25", "mmr #2"):
        assert factor in shown, factor


# -- candidate budget --------------------------------------------------------------------


def test_the_keyword_leg_asks_for_at_most_the_configured_candidates(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for number in range(20):
        write_note(
            vault, f"shelf/n{number:02}.md", f"# Box {number}\n\nLabel the shelf {number}.\n"
        )
    budget = {"APUS_MEMORY__SEARCH__QUERY__CANDIDATES": "5"}
    small = make_settings(vault, env=budget)
    sync(small)

    response = _search(small, "shelf", limit=50)
    assert response.legs["keyword"].candidates == 5
    assert len(response.hits) == 5
    assert _search(make_settings(vault), "shelf", limit=50).legs["keyword"].candidates == 20

    data = json.loads(_cli(vault, "search", "--json", "-n", "50", "shelf", **budget))
    assert data["legs"]["keyword"]["candidates"] == 5
    assert len(data["results"]) == 5


# -- hybrid: the merge and its settings, over a vector leg without a model ----------------


def _hybrid_vault(vault: Path) -> None:
    write_note(vault, "projects/network.md", "# Network\n\nThe router lives in the closet.\n")
    # A keyword match decayed far below anything the vector leg finds.
    write_note(
        vault,
        f"daily/{dt.date.today() - dt.timedelta(days=150)}.md",
        "The router was reset after the storm.\n",
    )
    write_note(vault, "projects/garden.md", "# Garden\n\nTomatoes and basil on the balcony.\n")
    write_note(vault, "notes/bread.md", "# Bread\n\nBaked bread, the crumb was open.\n")
    for number in range(20):
        write_note(
            vault, f"shelf/n{number:02}.md", f"# Box {number}\n\nLabel the shelf {number}.\n"
        )


@pytest.fixture
def merged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The hybrid vault indexed by keyword; its searches get `WordVectorLeg` as their vector
    leg (`_hybrid_search`), so these tests weigh the merge, not a model."""
    vault = tmp_path / "vault"
    _hybrid_vault(vault)
    monkeypatch.setenv("APUS_VAULT", str(vault))
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "none")
    settings = load_settings()
    assert sync(settings).skipped == []
    return settings


def _hybrid_search(
    settings: Settings, query: str, cosines: Mapping[str, float] | None = None, **options: object
) -> SearchResponse:
    """One search by the real Searcher, its vector leg `WordVectorLeg` on the same index."""
    leg = WordVectorLeg(settings.index_dir(), cosines)
    searcher = Searcher(settings, vector_leg=leg)
    try:
        response = searcher.search(query, SearchOptions(**options))  # type: ignore[arg-type]
    finally:
        searcher.close()
    assert leg.queries == [query] and leg.closed
    return response


@pytest.fixture
def hybrid(tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """The hybrid vault with vectors from the managed server; stopped again afterwards."""
    vault = tmp_path / "vault"
    _hybrid_vault(vault)
    monkeypatch.setenv("APUS_VAULT", str(vault))
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "local")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__LOCAL__MODELPATH", str(tiny_model))
    monkeypatch.setenv("APUS_MEMORY__SEARCH__LOCAL__CONTEXTSIZE", "512")
    settings = load_settings()
    report = sync(settings)
    assert report.embedding.state == "done"
    assert report.embedded == report.chunks
    yield settings
    embedder = resolve_provider(settings.search).embedder
    assert embedder is not None
    embedder.server.stop()  # type: ignore[attr-defined]


def test_hybrid_runs_both_legs_and_merges_with_the_weights(merged: Settings) -> None:
    # Equal weights: none is set and the query is no lookup by name.
    response = _hybrid_search(merged, "router closet", min_score=0.0, limit=50)
    assert response.legs["keyword"].ran and response.legs["vector"].ran
    assert response.legs["vector"].candidates == 24  # every chunk: fewer than 200
    hits = response.hits
    assert hits[0].path == "projects/network.md"
    assert hits[0].legs == ("keyword", "vector")
    assert all("vector" in hit.legs for hit in hits)
    for hit in hits:
        e = hit.explain
        assert e.vector_raw is not None
        assert e.merged == pytest.approx(0.5 * e.vector_norm + 0.5 * e.text_norm)
        assert e.final == pytest.approx(e.merged * e.recency_weight * e.importance)
        assert hit.score == pytest.approx(e.final * e.diversity, abs=1e-5)


@pytest.mark.parametrize(
    ("query", "environment", "weights"),
    [
        ("router closet", {}, (0.5, 0.5)),  # the shipped default, whatever the model
        ("shelf 7", {}, (0.3, 0.7)),  # two words, one an identifier: a lookup by name
        ("router closet", {"QUERY__HYBRID__VECTORWEIGHT": "0.7"}, (0.7, 0.3)),  # the rest
        ("shelf 7", {"QUERY__HYBRID__TEXTWEIGHT": "0.4"}, (0.6, 0.4)),  # set wins over lookup
    ],
)
def test_the_weights_are_equal_unless_set_or_a_lookup(
    merged: Settings,
    monkeypatch: pytest.MonkeyPatch,
    query: str,
    environment: dict[str, str],
    weights: tuple[float, float],
) -> None:
    for key, value in environment.items():
        monkeypatch.setenv(f"APUS_MEMORY__SEARCH__{key}", value)
    settings = load_settings()
    response = _hybrid_search(settings, query, min_score=0.0, limit=50, mmr=False)
    assert response.legs["vector"].ran
    both = [hit for hit in response.hits if hit.explain.text_raw is not None]
    assert both
    wv, wt = weights
    for hit in response.hits:
        e = hit.explain
        assert e.merged == pytest.approx(wv * e.vector_norm + wt * e.text_norm)


@pytest.mark.parametrize("merge", ["weighted", "zscore", "rrf"])
def test_hybrid_merge_setting_chooses_scores_or_ranks(
    merged: Settings, monkeypatch: pytest.MonkeyPatch, merge: str
) -> None:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__QUERY__HYBRID__MERGE", merge)
    monkeypatch.setenv("APUS_MEMORY__SEARCH__QUERY__HYBRID__RRFK", "10")
    settings = load_settings()
    hits = _hybrid_search(settings, "router closet", min_score=0.0, limit=50, mmr=False).hits
    assert hits[0].path == "projects/network.md"
    by_vector = sorted(hits, key=lambda hit: -(hit.explain.vector_raw or 0.0))
    keyword = sorted(
        (hit for hit in hits if hit.explain.text_raw is not None),
        key=lambda hit: -(hit.explain.text_raw or 0.0),
    )
    assert len(keyword) == 2 and len(by_vector) == 24
    for hit in hits:
        e = hit.explain
        assert e.merged == pytest.approx(0.5 * e.vector_norm + 0.5 * e.text_norm)
    if merge == "zscore":  # both legs in standard deviations, on one shared scale
        assert max(max(h.explain.vector_norm, h.explain.text_norm) for h in hits) == 1.0
        assert by_vector[-1].explain.vector_norm == pytest.approx(0.0)
        assert max(hit.explain.vector_norm for hit in hits) == pytest.approx(
            by_vector[0].explain.vector_norm
        )
        return
    if merge == "rrf":  # each leg's n-th best scores (k + 1) / (k + n), with k = 10
        for rank, hit in enumerate(by_vector, start=1):
            assert hit.explain.vector_norm == pytest.approx(11 / (10 + rank))
        assert [hit.explain.text_norm for hit in keyword] == pytest.approx([1.0, 11 / 12])
    else:  # scores: the keyword leg's ratio to its best, cosines over the candidates
        first, second = keyword
        ratio = (second.explain.text_raw or 0.0) / (first.explain.text_raw or 1.0)
        assert second.explain.text_norm == pytest.approx(ratio)
        assert by_vector[-1].explain.vector_norm == pytest.approx(0.0)
    assert by_vector[0].explain.vector_norm == pytest.approx(1.0)


def test_hybrid_min_score_drops_weak_vector_only_hits_but_keeps_keyword_ones(
    merged: Settings,
) -> None:
    # In meaning the decayed keyword match is the farthest note and the garden the nearest.
    decayed_path = f"daily/{dt.date.today() - dt.timedelta(days=150)}.md"
    meaning = {decayed_path: -0.5, "projects/garden.md": 0.6}
    everything = _hybrid_search(
        merged, "router closet", meaning, min_score=0.0, limit=50, mmr=False
    ).hits
    keyword = [hit for hit in everything if "keyword" in hit.legs]
    vector_only = [hit for hit in everything if "keyword" not in hit.legs]
    assert keyword[0].path == "projects/network.md"
    assert len(keyword) == 2 and len(vector_only) == 22
    decayed = keyword[1]
    assert decayed.path == decayed_path
    best_vector_only = max(hit.score for hit in vector_only)
    # The decayed keyword match scores below the best vector-only hits...
    assert decayed.score < best_vector_only
    assert keyword[0].score > best_vector_only

    # ...yet a threshold between the two best keeps it and drops the vector-only ones.
    threshold = (keyword[0].score + best_vector_only) / 2
    for limit in (2, 10):
        kept = _hybrid_search(
            merged, "router closet", meaning, min_score=threshold, limit=limit
        ).hits
        assert [hit.path for hit in kept] == [keyword[0].path, decayed.path]
    nothing_passes = _hybrid_search(merged, "router closet", meaning, min_score=0.99).hits
    assert [hit.path for hit in nothing_passes] == [keyword[0].path, decayed.path]


def test_each_leg_asks_for_at_most_the_configured_candidates(
    merged: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__QUERY__CANDIDATES", "5")
    response = _hybrid_search(load_settings(), "label the shelf", min_score=0.0, limit=50)
    assert response.legs["keyword"].candidates == 5
    assert response.legs["vector"].candidates == 5
    assert 5 <= len(response.hits) <= 10  # the union of two lists of five


def test_a_running_search_keeps_the_settings_it_started_with(
    hybrid: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__QUERY__MAXRESULTS", "50")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__QUERY__MINSCORE", "0")
    started_with = load_settings()
    monkeypatch.setenv("APUS_MEMORY__SEARCH__QUERY__MAXRESULTS", "1")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__QUERY__MINSCORE", "1")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__QUERY__HYBRID__TEMPORALDECAY__ENABLED", "false")
    changed = load_settings()
    with Memory(settings=started_with) as memory:
        searcher = memory.searcher()
        stages = searcher.search_stages("router closet")
        keyword = next(stages)
        # Settings that change while the vector leg runs belong to the next search.
        searcher.settings = changed
        merged = next(stages)
        assert next(stages, None) is None
        searcher.settings = started_with
        again = searcher.search("router closet")
    assert not keyword.final and merged.final
    assert merged.legs["vector"].ran
    assert len(merged.hits) == 24  # every chunk: maxResults 50 and minScore 0 still hold
    assert [(h.chunk_id, h.score, h.explain) for h in merged.hits] == [
        (h.chunk_id, h.score, h.explain) for h in again.hits
    ]


def test_explain_json_through_the_cli_with_vectors(hybrid: Settings) -> None:
    data = json.loads(
        run_apus(
            "memory", "search", "--explain", "--json", "router", "closet", env=dict(os.environ)
        ).stdout
    )
    assert data["legs"]["vector"]["ran"] is True
    top = data["results"][0]
    assert top["path"] == "projects/network.md"
    assert top["legs"] == ["keyword", "vector"]
    assert set(top["explain"]) == EXPLAIN_KEYS
    assert top["explain"]["vector_raw"] is not None
    assert top["explain"]["text_raw"] is not None
    assert top["explain"]["tier"] == "none"
    assert top["explain"]["mmr_position"] == 1


def test_a_note_leads_with_its_best_chunk_after_mmr(tmp_path: Path) -> None:
    # B's chunk is the best; A's first chunk nearly repeats it (so MMR pushes it down) while
    # A's second chunk is weaker but different (so MMR pulls it up). A must still lead with
    # its best chunk.
    shared = "lighthouse keeper climbs the spiral stairs at dusk to light the great lamp"
    vault = tmp_path / "v"
    write_note(vault, "b.md", f"{shared} lighthouse lighthouse\n")
    write_note(
        vault,
        "a.md",
        f"{shared} lighthouse\n\nfishing boats harbour nets gulls tide lighthouse "
        "herring smoke market quay anchors sails rigging mast\n",
    )
    settings = load_settings(
        overrides={
            "vault": str(vault),
            "memory.search.provider": "none",
            "memory.search.chunking.tokens": 32,
            "memory.search.chunking.overlap": 0,
        }
    )
    Indexer(settings).sync()
    searcher = Searcher(settings)
    try:
        with_mmr = searcher.search("lighthouse", SearchOptions(mode="keyword")).hits
        plain = searcher.search("lighthouse", SearchOptions(mode="keyword", mmr=False)).hits
    finally:
        searcher.close()
    a_plain = [h.start_line for h in plain if h.path == "a.md"]
    assert len(a_plain) == 2 and a_plain[0] == 1  # the repeated passage scores higher
    a_mmr = [h.start_line for h in with_mmr if h.path == "a.md"]
    assert a_mmr == a_plain
    scores = [h.score for h in with_mmr if h.path == "a.md"]
    assert scores == sorted(scores, reverse=True)


def test_meaning_only_matches_from_years_ago_are_found(tmp_path: Path) -> None:
    """Every note is from 2023, years before any date these tests run on: search by meaning
    still answers (minScore judges relevance), and every score tells its result apart."""
    vault = tmp_path / "vault"
    topics = ["the router in the closet", "tomatoes on the balcony", "bread with an open crumb"]
    for number, topic in enumerate(topics * 2, start=1):
        write_note(
            vault, f"memory/2023-05-{number:02}.md", f"# Day {number}\n\nWe talked about {topic}.\n"
        )
    settings = make_settings(vault)
    assert sync(settings).skipped == []
    for floor in (None, 0.0):
        env = (
            {}
            if floor is None
            else {"APUS_MEMORY__SEARCH__QUERY__HYBRID__TEMPORALDECAY__FLOOR": str(floor)}
        )
        response = _hybrid_search(make_settings(vault, env=env), "garden vegetables", mode="vector")
        hits = response.hits
        assert hits, f"floor {floor}: no result by meaning"
        for hit in hits:
            e = hit.explain
            assert hit.legs == ("vector",)
            assert e.recency < 2**-36  # three years and more
            assert e.merged >= settings.search.query.min_score
            assert hit.score > 0
            assert e.final == pytest.approx(e.merged * e.recency_weight * e.importance)
            # A score shows six significant digits (ranking.readable_score).
            assert hit.score == pytest.approx(e.final * e.diversity, rel=5e-6)
        assert len({hit.score for hit in hits}) >= len({hit.explain.merged for hit in hits})
