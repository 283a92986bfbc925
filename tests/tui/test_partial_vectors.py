"""The app during its own first embedding: a hit search by meaning found among the vectors
built so far says so on its badge, and the results line says how much meaning covers."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Label

from apus.indexing.embedding import EMBED_BATCH_CHUNKS
from apus.search.results import SearchResponse
from apus.tui.app import ApusApp
from apus.tui.screens.search import SearchScreen
from apus.tui.widgets.results import ResultList
from support.holds import Hold

from .factory import SIZE, make_app, settle, write_vault

DATED = [f"memory/2026-02-{day:02}.md" for day in range(1, 29)]
UNDATED = [f"archive/a{number:02}.md" for number in range(20)]
FIRST_BATCH = {"MEMORY.md", *sorted(DATED, reverse=True)[: EMBED_BATCH_CHUNKS - 1]}
TOTAL = 1 + len(DATED) + len(UNDATED)  # one passage per note
PARTIAL = "meaning · partial vectors"


def _notes() -> dict[str, str]:
    notes = {"MEMORY.md": "# Memory\n\nThe blog deploys with make deploy.\n"}
    for number, rel in enumerate(DATED):
        notes[rel] = f"Day note {number}: watered the plants, word dated{number}.\n"
    for number, rel in enumerate(UNDATED):
        notes[rel] = f"# Archive {number}\n\nAn old page about zebra{number:02}.\n"
    return notes


async def _final_answer(pilot: Pilot[object], query: str) -> SearchResponse:
    """Type `query` and wait for the screen to show its merged (final) results."""
    await pilot.press(*query)
    screen = pilot.app.screen
    assert isinstance(screen, SearchScreen)
    while (answer := screen.response) is None or answer.query != query or not answer.final:
        await pilot.pause(0.01)
    await pilot.pause()
    return answer


def _badged(app: ApusApp) -> dict[str, bool]:
    """Each shown hit's path: whether its badges say it came from partial vectors."""
    results = app.screen.query_one(ResultList)
    return {
        hit.path: PARTIAL in results.get_option(str(index)).prompt.plain  # type: ignore[union-attr]
        for index, hit in enumerate(results.hits)
    }


async def test_a_hit_found_among_partial_vectors_says_so_on_its_badge(
    tmp_path: Path, config_file: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APUS_MEMORY__SEARCH__PROVIDER", "local")
    monkeypatch.setenv("APUS_MEMORY__SEARCH__LOCAL__MODEL_PATH", str(tiny_model))
    hold = Hold(tmp_path / "hold")  # the app's sync stops after its first batch of vectors
    for name, value in hold.env(f"embed:{EMBED_BATCH_CHUNKS}").items():
        monkeypatch.setenv(name, value)
    app = make_app(write_vault(tmp_path / "home" / "notes", _notes()), config_file)
    async with app.run_test(size=SIZE) as pilot:
        while (point := hold.held()) is None:
            await pilot.pause(0.01)
        assert (point["phase"], point["done"]) == ("embed", EMBED_BATCH_CHUNKS)
        during = await _final_answer(pilot, "watered")
        assert during.coverage == pytest.approx(EMBED_BATCH_CHUNKS / TOTAL)
        badged = _badged(app)
        by_meaning = {hit.path for hit in during.hits if "vector" in hit.legs}
        assert by_meaning and by_meaning <= FIRST_BATCH
        assert {path for path, partial in badged.items() if partial} == by_meaning
        info = str(app.screen.query_one("#search-info", Label).render())
        assert f"meaning covers {100 * EMBED_BATCH_CHUNKS // TOTAL}%" in info

        hold.release()
        await settle(pilot)
        await pilot.press(*["backspace"] * len("watered"))
        after = await _final_answer(pilot, "plants")
        assert after.coverage is None
        assert any("vector" in hit.legs for hit in after.hits)
        assert not any(_badged(app).values())
        assert "meaning covers" not in str(app.screen.query_one("#search-info", Label).render())
