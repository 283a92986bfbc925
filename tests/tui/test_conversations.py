"""Conversations in the app: the source toggle (remappable by id), a transcript hit's preview,
and the conversation reader it opens."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.notifications import Notify
from textual.widgets import Label, Static

from apus.tui.screens.conversation import ConversationScreen
from apus.tui.screens.search import SearchScreen
from apus.tui.widgets.conversation import ConversationView
from apus.tui.widgets.preview import NotePreview
from apus.tui.widgets.results import ResultList
from support.transcripts import conversation, enabled_env, write_transcript

from .factory import SIZE, Recorder, index_for_app, make_app, settle


@pytest.fixture
def agents(tmp_path: Path) -> Path:
    root = tmp_path / "agents"
    exchanges = [(f"Small talk number {i}?", f"Reply number {i}.") for i in range(6)]
    exchanges.insert(3, ("Which glaze for the teapot?", "Celadon, fired to cone six."))
    write_transcript(root, "main/pottery", conversation("main/pottery", exchanges))
    return root


@pytest.fixture
def transcripts_on(agents: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Small chunks, so that a hit is a few messages of the conversation, not all of it.
    for key, value in enabled_env(agents, APUS_MEMORY__SEARCH__CHUNKING__TOKENS="40").items():
        monkeypatch.setenv(key, value)


def hit_paths(app: object) -> list[str]:
    return [hit.path for hit in app.screen.query_one(ResultList).hits]  # type: ignore[attr-defined]


@pytest.mark.usefixtures("transcripts_on")
async def test_the_toggle_a_preview_and_the_reader(vault: Path, config_file: Path) -> None:
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text('[tui.keys]\ntoggle_conversations = "f6"\n', encoding="utf-8")
    index_for_app(vault, config_file)
    app = make_app(vault, config_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        hint = str(app.screen.query_one("#results-message", Static).render())
        assert "Agent conversations are indexed: F6 adds them" in hint
        await pilot.press(*"celadon")
        await settle(pilot)
        assert hit_paths(app) == []  # notes only, by default
        await pilot.press("f6")  # toggle_conversations, remapped
        await settle(pilot)
        assert hit_paths(app) == ["sessions:main/pottery"]
        info = str(app.screen.query_one("#search-info", Label).render())
        assert "with conversations" in info

        view = app.screen.query_one("#conversation-preview", ConversationView)
        assert view.display and not app.screen.query_one(NotePreview).display
        marked = [str(block.render()) for block in view.marked()]
        assert any("Celadon, fired to cone six." in text for text in marked)
        assert not any("Small talk number 0" in text for text in marked)

        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, ConversationScreen)
        reader = app.screen.query_one(ConversationView)
        assert reader.window is not None and reader.window.info.messages == 14
        assert any("Which glaze for the teapot?" in str(b.render()) for b in reader.marked())
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)

        await pilot.press("f6")  # and off again: notes only
        await settle(pilot)
        assert hit_paths(app) == []


async def test_the_toggle_says_how_to_turn_transcripts_on(
    vault: Path, config_file: Path, agents: Path
) -> None:
    index_for_app(vault, config_file)
    app = make_app(vault, config_file)
    recorder = Recorder(Notify)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert app.include_conversations is False
        assert any("sessionMemory" in text for text in recorder.notifications())


async def test_an_agent_only_visibility_keeps_them_out_of_the_app(
    vault: Path, config_file: Path, agents: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in enabled_env(agents, APUS_TOOLS__SESSIONS__VISIBILITY="agent").items():
        monkeypatch.setenv(key, value)
    index_for_app(vault, config_file)
    app = make_app(vault, config_file)
    recorder = Recorder(Notify)
    async with app.run_test(size=SIZE, message_hook=recorder) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")
        await settle(pilot)
        assert app.include_conversations is False
        assert any("tools.sessions.visibility is 'agent'" in t for t in recorder.notifications())
