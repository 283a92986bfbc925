"""The TUI's pure helpers: snippet flattening, status wording, editor argv, note windows, keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from apus.index.status import EmbeddingsState
from apus.search.results import LegReport
from apus.tui.editor import NoEditorError, editor_command
from apus.tui.format import eta_text, flatten_snippet, home_relative, plural
from apus.tui.notes import WINDOW_LINES, load_note
from apus.tui.screens.help import key_label
from apus.tui.state import VectorEvidence, provider_view
from apus.units import human_size


def test_flatten_collapses_whitespace_and_markers_and_moves_highlights() -> None:
    text = "# Coffee\n\n## V60\n\n- 18 g coffee"  # "Coffee" is [2, 8), "coffee" is [25, 31)
    flat, spans = flatten_snippet(text, ((2, 8), (25, 31)), 200)
    assert flat == "Coffee · V60 · 18 g coffee"
    assert [flat[a:b] for a, b in spans] == ["Coffee", "coffee"]


def test_flatten_cuts_at_the_limit_and_clips_highlights() -> None:
    flat, spans = flatten_snippet("alpha beta gamma", ((6, 10), (11, 16)), 9)
    assert flat == "alpha be…"
    assert spans == ((6, 8),)


def test_flatten_keeps_hyphens_inside_words() -> None:
    assert flatten_snippet("on-call  run-book", (), 100)[0] == "on-call run-book"


def test_small_formatters(monkeypatch: pytest.MonkeyPatch) -> None:
    assert plural(1, "note") == "1 note"
    assert plural(38_404, "note") == "38,404 notes"
    assert human_size(999) == "999 bytes"
    assert human_size(123_456) == "120.6 KB"
    assert human_size(5 * 1024 * 1024) == "5.0 MB"
    assert human_size(3 * 1024**3) == "3.0 GB"
    assert eta_text(None) == ""
    assert eta_text(42) == "42 s left"
    assert eta_text(150) == "2 min left"
    monkeypatch.setenv("HOME", "/home/ana")
    assert home_relative("/home/ana/notes") == "~/notes"
    assert home_relative("/home/anabel/notes") == "/home/anabel/notes"


def test_provider_view_wording() -> None:
    assert provider_view(None, 0).text == "opening the index…"
    assert provider_view(EmbeddingsState("ready"), 0).text == "semantic ready"
    rebuilding = provider_view(EmbeddingsState("rebuilding", done=42, total=100), 0)
    assert rebuilding.text == "rebuilding 42%"
    assert provider_view(EmbeddingsState("rebuilding"), 0).text == "rebuilding"
    first = provider_view(EmbeddingsState("embedding", "covers 12%", done=12, total=100), 0)
    assert (first.state, first.text, first.detail) == ("embedding", "embedding 12%", "covers 12%")
    keyword_only = provider_view(
        EmbeddingsState(
            "keyword-only",
            "the model is not downloaded yet",
            "apus models pull embeddinggemma-300m",
        ),
        0,
    )
    assert keyword_only.text == "keyword-only: the model is not downloaded yet"
    assert keyword_only.detail == "apus models pull embeddinggemma-300m"
    paused = provider_view(
        EmbeddingsState("paused", "model changed", "apus memory index --force"), 0
    )
    assert paused.text == "paused: apus memory index --force"
    assert provider_view(EmbeddingsState("off", "provider is none"), 0).state == "off"


def test_the_newer_of_status_and_search_wins() -> None:
    failed = LegReport(False, "embedding server crashed", "apus memory status --deep")
    worked = LegReport(True)
    ready = EmbeddingsState("ready")
    view = provider_view(ready, 10, VectorEvidence(failed, 11))
    assert view.text == "keyword-only: embedding server crashed"
    assert view.detail == "apus memory status --deep"
    assert provider_view(ready, 12, VectorEvidence(failed, 11)).text == "semantic ready"
    down = EmbeddingsState("keyword-only", "server down")
    assert provider_view(down, 10, VectorEvidence(worked, 11)).text == "semantic ready"
    # A search that covered only the passages embedded so far proves no recovery to "ready".
    stopped = EmbeddingsState("keyword-only", "embedding stopped at 30%")
    partial = VectorEvidence(LegReport(True, coverage=0.3), 11)
    assert provider_view(stopped, 10, partial).state == "keyword-only"


def test_editor_command_per_editor_family() -> None:
    note = Path("/v/n.md")
    assert editor_command(note, 7, {"EDITOR": "vim"}) == ["vim", "+7", "/v/n.md"]
    assert editor_command(note, 7, {"VISUAL": "code --wait", "EDITOR": "vi"}) == [
        "code",
        "--wait",
        "-g",
        "/v/n.md:7",
    ]
    assert editor_command(note, 0, {"EDITOR": "/usr/bin/hx"}) == ["/usr/bin/hx", "/v/n.md:1"]
    with pytest.raises(NoEditorError):
        editor_command(note, 1, {})


def test_load_note_strips_frontmatter_and_keeps_file_lines(tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("---\ntitle: T\n---\n# Head\n\nBody\n", encoding="utf-8")
    document = load_note(tmp_path, "n.md")
    assert document.title == "T"
    assert document.text == "# Head\n\nBody\n"
    assert document.first_line == 4  # "# Head" is line 4 of the file
    assert not document.clipped and not document.problem


def test_load_note_shows_a_window_of_a_long_note(tmp_path: Path) -> None:
    lines = [f"line {n}\n" for n in range(1, 5001)]
    (tmp_path / "long.md").write_text("".join(lines), encoding="utf-8")
    document = load_note(tmp_path, "long.md", focus_line=3000)
    assert document.clipped
    assert len(document.text.splitlines()) == WINDOW_LINES
    assert document.first_line <= 3000 < document.first_line + WINDOW_LINES
    assert document.text.startswith(f"line {document.first_line}\n")


def test_load_note_reports_an_unreadable_note(tmp_path: Path) -> None:
    document = load_note(tmp_path, "missing.md")
    assert document.problem
    assert document.text == ""


def test_key_labels() -> None:
    assert key_label("ctrl+r") == "Ctrl+R"
    assert key_label("escape,q") == "Esc / q"
    assert key_label("f1") == "F1"
    assert key_label("slash") == "/"
