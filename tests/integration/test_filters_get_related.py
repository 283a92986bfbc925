"""Search filters (path, dates, tags) applied inside retrieval, `memory get`, `memory related`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from apus.config import Settings
from apus.index.note_filter import NoteFilter
from apus.index.vectors import VectorIndex
from apus.memory import Memory
from apus.memory.note_reader import NoteRefusedError
from apus.search.options import SearchOptions
from support.tiny_gguf import write_tiny_gguf
from support.vaults import (
    index_vault,
    local_model_settings,
    make_settings,
    run_apus,
    run_json,
    sync,
    write_note,
)

DATED = {
    "daily/2026-03-02.md": "# Monday\n\nHeron by the canal, grey and patient.\n",
    "daily/2026-03-09.md": "# Monday\n\nAnother heron, this time on the roof.\n",
    "daily/2026-04-20.md": "# Monday\n\nThe heron is back at the pond.\n",
    # No date in the name: the frontmatter's counts.
    "trips/coast.md": "---\ndate: 2026-03-05\ntags: [birds, travel]\n---\n# Coast\n\n"
    "A heron fishing in the surf.\n",
    "trips/hills.md": '---\ntags: "#travel"\n---\n# Hills\n\nNo heron up here, only buzzards.\n',
    "work/standup.md": "---\ntags: [Work]\n---\n# Standup\n\nThe heron project ships Friday.\n",
}


def paths_of(result: dict[str, object]) -> list[str]:
    return sorted(hit["path"] for hit in result["results"])  # type: ignore[index, union-attr]


@pytest.fixture
def dated_vault(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    for rel, text in DATED.items():
        write_note(vault, rel, text)
    old = 1_700_000_000  # 2023-11-14: undated notes fall back to the day they were modified
    for rel in ("trips/hills.md", "work/standup.md"):
        os.utime(vault / rel, (old, old))
    index_vault(vault)
    return vault


def search_json(vault: Path, *args: str) -> dict[str, object]:
    return run_json("--vault", vault, "memory", "search", "heron", "--json", *args)


def test_dates_come_from_the_name_then_the_frontmatter_then_the_file(dated_vault: Path) -> None:
    assert paths_of(search_json(dated_vault, "--since", "2026-03-01", "--until", "2026-03-31")) == [
        "daily/2026-03-02.md",
        "daily/2026-03-09.md",
        "trips/coast.md",
    ]
    assert paths_of(search_json(dated_vault, "--since", "2026-04-01")) == ["daily/2026-04-20.md"]
    assert paths_of(search_json(dated_vault, "--until", "2024-01-01")) == [
        "trips/hills.md",
        "work/standup.md",
    ]


def test_tags_paths_and_citations(dated_vault: Path) -> None:
    assert paths_of(search_json(dated_vault, "--tag", "travel")) == [
        "trips/coast.md",
        "trips/hills.md",
    ]
    # Every tag given must be there; case and `#` do not matter.
    assert paths_of(search_json(dated_vault, "--tag", "#TRAVEL", "--tag", "birds")) == [
        "trips/coast.md"
    ]
    assert paths_of(search_json(dated_vault, "--tag", "work")) == ["work/standup.md"]
    # Prefixes are alternatives.
    both = search_json(dated_vault, "--path", "./trips/", "--path", "work")
    assert paths_of(both) == ["trips/coast.md", "trips/hills.md", "work/standup.md"]
    hit = both["results"][0]  # type: ignore[index]
    assert hit["citation"] == f"{hit['path']}#L{hit['start_line']}-L{hit['end_line']}"
    assert hit["source"] == "memory"
    assert paths_of(search_json(dated_vault, "--path", "nowhere/")) == []


def test_a_filter_finds_matches_that_rank_below_the_unfiltered_candidates(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    loud = "kestrel " * 30
    for number in range(230):
        write_note(vault, f"noise/n{number:03}.md", f"# Kestrel {number}\n\n{loud}\n")
    filler = "Notes on the weather, the canal and the allotment. " * 40
    for number in range(3):
        write_note(
            vault, f"archive/a{number}.md", f"# Old {number}\n\n{filler}\nOne kestrel.\n{filler}"
        )
    settings = make_settings(vault)
    sync(settings)
    with Memory(settings=settings) as memory:
        unfiltered = memory.search("kestrel", SearchOptions(mode="keyword", limit=200))
        assert len(unfiltered.hits) == 200
        assert not any(hit.path.startswith("archive/") for hit in unfiltered.hits)
        only = SearchOptions(mode="keyword", filters=NoteFilter(path_prefixes=("archive/",)))
        found = memory.search("kestrel", only)
    assert sorted(hit.path for hit in found.hits) == [f"archive/a{n}.md" for n in range(3)]


# -- memory get ---------------------------------------------------------------------------


@pytest.fixture
def readable_vault(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    lines = "\n".join(f"line {number}" for number in range(1, 451))
    write_note(vault, "long.md", f"# Long\n\n{lines}\n")
    write_note(vault, "notes/short.md", "# Short\n\nTwo lines.\n")
    (tmp_path / "secret.md").write_text("# Secret\n\nnot for agents\n", encoding="utf-8")
    write_note(vault, "todo.txt", "not a note\n")
    index_vault(vault)
    return vault


def test_get_pages_through_a_long_note(readable_vault: Path) -> None:
    first = run_json("--vault", readable_vault, "memory", "get", "long.md", "--json")
    assert (first["from"], first["lines"], first["truncated"], first["next_from"]) == (
        1,
        200,
        True,
        201,
    )
    assert first["text"].splitlines()[0] == "# Long"
    last = run_json(
        "--vault", readable_vault, "memory", "get", "./long.md", "--from", "401", "--json"
    )
    assert last["text"].splitlines() == [f"line {n}" for n in range(399, 451)]
    assert last["truncated"] is False and last["next_from"] is None
    assert last["total_lines"] == 452


def test_get_refuses_what_is_not_an_indexed_note_inside_the_vault(
    readable_vault: Path, tmp_path: Path
) -> None:
    (readable_vault / "notes" / "link-out.md").symlink_to(tmp_path / "secret.md")
    escapes = {
        "../secret.md": "not an indexed note",
        str(tmp_path / "secret.md"): "not an indexed note",
        "notes/link-out.md": "not an indexed note",  # the scan never admitted it
        "todo.txt": "not a Markdown note",
        "notes/missing.md": "not an indexed note",
        "": "empty",
    }
    for raw, words in escapes.items():
        result = run_apus("--vault", readable_vault, "memory", "get", raw, expect=1)
        assert words in result.stderr and "Fix:" in result.stderr, result.stderr
        assert "not for agents" not in result.stdout + result.stderr


def test_get_refuses_an_indexed_note_swapped_for_a_link_out(
    readable_vault: Path, tmp_path: Path
) -> None:
    """Indexed while inside; replaced by a symlink to the outside afterwards."""
    settings = make_settings(readable_vault)
    short = readable_vault / "notes" / "short.md"
    short.unlink()
    short.symlink_to(tmp_path / "secret.md")
    with Memory(settings=settings) as memory, pytest.raises(NoteRefusedError, match="outside"):
        memory.get("notes/short.md")
    absolute = str(readable_vault / "long.md")
    with Memory(settings=settings) as memory:
        assert memory.get(absolute, 1, 1).text == "# Long"


# -- memory related -----------------------------------------------------------------------

RELATED = {
    "garden.md": "# Garden\n\nTomatoes and basil on the balcony.\n\n## Watering\n\nEvenings.\n",
    "balcony.md": "# Balcony tomatoes\n\nThe tomatoes want water every evening in July.\n",
    "network.md": "# Network\n\nThe router lives in the hallway closet.\n",
    "bread.md": "# Bread\n\nBaked bread; the crumb was open.\n",
}


@pytest.fixture
def tiny_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Path, Settings]]:
    vault = tmp_path / "vault"
    for rel, text in RELATED.items():
        write_note(vault, rel, text)
    model = write_tiny_gguf(tmp_path / "tiny-embeddinggemma.gguf", name="tiny-embeddinggemma")
    settings = local_model_settings(vault, model, monkeypatch)
    assert sync(settings).embedding.state == "done"
    yield vault, settings
    with Memory(settings=settings) as memory:
        embedder = memory.provider.embedder
        assert embedder is not None
        embedder.server.stop()  # type: ignore[attr-defined]


def test_related_by_vectors_excludes_the_note_and_gives_one_hit_per_note(
    tiny_settings: tuple[Path, Settings],
) -> None:
    _vault, settings = tiny_settings
    with Memory(settings=settings) as memory:
        response = memory.related("garden.md", 10)
        assert response.mode == "vector" and response.legs["vector"].ran
        paths = [hit.path for hit in response.hits]
        assert "garden.md" not in paths
        assert sorted(paths) == ["balcony.md", "bread.md", "network.md"]
        # The vectors are the store's: nothing was embedded for the question.
        limited = memory.related("garden.md", 1, NoteFilter(path_prefixes=("net",)))
        assert [hit.path for hit in limited.hits] == ["network.md"]


def test_related_falls_back_to_title_and_headings_without_vectors(
    tiny_settings: tuple[Path, Settings],
) -> None:
    _vault, settings = tiny_settings
    VectorIndex(settings.index_dir()).path.unlink()  # vectors unusable until the next sync
    keyword_only = make_settings(settings.vault_path())
    sync(keyword_only)
    with Memory(settings=keyword_only) as memory:
        response = memory.related("garden.md", 10)
    assert response.mode == "keyword"
    assert [hit.path for hit in response.hits] == ["balcony.md"]  # "Watering", "tomatoes"…


def test_related_through_the_cli_refuses_an_unknown_note(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    for rel, text in RELATED.items():
        write_note(vault, rel, text)
    index_vault(vault)
    result = run_json("--vault", vault, "memory", "related", "garden.md", "--json")
    assert "garden.md" not in paths_of(result)
    assert result["results"][0]["path"] == "balcony.md"
    refused = run_apus("--vault", vault, "memory", "related", "../etc/passwd.md", expect=1)
    assert "not an indexed note" in refused.stderr
