"""`apus memory index --force` builds beside the live index and swaps it in when complete.

Search keeps answering from the old index until then (the rule that keyword search stays
available), readers that hold the old index open follow the swap by themselves, and a run
that dies half-way leaves the old index serving and its half-built one for the next run to
clean up.

Each test stops the rebuild at a known point of its work (`support.holds`) to search or kill
it there, so what it shows does not depend on how fast the machine runs the rebuild.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from apus.config import Settings
from apus.embed.providers import resolve_provider
from apus.index.keyword import KeywordIndex
from apus.index.store import Store
from apus.indexing.request import SyncRequest
from apus.indexing.shadow import shadow_dir
from apus.memory import Memory
from apus.search.engine import Searcher
from apus.search.options import SearchOptions
from support.holds import Hold
from support.vaults import (
    APUS,
    cli_env,
    generation,
    index_vault,
    local_model_settings,
    make_settings,
    run_apus,
    run_json,
    search_paths,
    sync,
    write_note,
)

# Small notes, as many as make a forced rebuild take several seconds (a few batches).
COUNT = 3000
KEYWORD = SearchOptions(mode="keyword")


def _numbered_vault(root: Path, count: int) -> Path:
    """`count` small notes, each with the shared word `kestrel` and its own `markerNNNN`."""
    filler = "Field notes on raptors, weather, wind and the hedgerows by the canal. " * 3
    for i in range(count):
        write_note(
            root,
            f"n{i // 100:02d}/note-{i:04d}.md",
            f"# Note {i}\n\nSeen today: a kestrel hovering, marker{i:04d}.\n\n{filler}\n",
        )
    return root


def _rewrite_unnoticed(path: Path, old: str, new: str) -> None:
    """Change a note so that only a forced rebuild sees it (same size, same mtime)."""
    info = path.stat()
    text = path.read_text(encoding="utf-8")
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def _start_forced_index(vault: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*APUS, "--vault", str(vault), "memory", "index", "--force"],
        env=env or cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


QUERIES = ["kestrel", "marker0042", "marker1500", "marker2999", "hedgerows canal"]


def _search_once(number: int, settings: Settings, searcher: Searcher) -> str | None:
    """Search number `number`: a long-lived searcher (as the app and the agent server keep
    one) and a fresh session per query (as `apus memory search` opens one), in turn. Returns
    why it came back empty, or None."""
    query = QUERIES[number % len(QUERIES)]
    if number % 2:
        with Memory(settings=settings) as memory:
            response = memory.search(query, KEYWORD)
    else:
        response = searcher.search(query, KEYWORD)
    if response.hits:
        return None
    return f"{query!r}: {response.legs['keyword'].reason or 'no hits'}"


@pytest.mark.slow
def test_search_never_goes_blank_during_a_forced_rebuild(tmp_path: Path) -> None:
    vault = _numbered_vault(tmp_path / "vault", COUNT)
    settings = make_settings(vault)
    index_vault(vault)
    _rewrite_unnoticed(vault / "n00/note-0007.md", "kestrel", "ospreys")
    searcher = Searcher(settings)
    hold = Hold(tmp_path / "hold")
    shadow_db = shadow_dir(settings.index_dir()) / Store.FILENAME
    try:
        assert [h.path for h in searcher.search("ospreys", KEYWORD).hits] == []
        # Stopped half-way through writing the new index, while it holds the writer lock:
        # the first searches overlap the rebuild itself on any machine.
        proc = _start_forced_index(vault, cli_env(**hold.env("index:1500")))
        searches, empty = 0, []
        try:
            hold.wait_held(proc=proc)
            assert _count(shadow_db, "files") == 1500
            assert (settings.index_dir() / "writer.pid").exists()
            for _ in range(20):
                empty += filter(None, [_search_once(searches, settings, searcher)])
                searches += 1
            hold.release()
            while proc.poll() is None:  # and on through the rest of it, and the swap
                empty += filter(None, [_search_once(searches, settings, searcher)])
                searches += 1
        finally:
            if proc.poll() is None:
                proc.kill()
            _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
        share = len(empty) / searches
        print(f"\n{len(empty)} of {searches} searches during --force were empty ({share:.1%})")
        assert empty == [], f"{len(empty)} of {searches} searches were empty ({share:.0%}): " + (
            "; ".join(empty[:5])
        )
        # The long-lived searcher follows the swap: it sees what only the rebuild read.
        hits = searcher.search("ospreys", KEYWORD).hits
        assert [h.path for h in hits] == ["n00/note-0007.md"]
        assert len(searcher.search("marker2999", KEYWORD).hits) == 1
    finally:
        searcher.close()


def _count(db: Path, table: str) -> int:
    """Rows committed in `table` of the database at `db` (0 while it is being created)."""
    try:
        with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_a_forced_rebuild_killed_half_way_leaves_the_old_index_serving(tmp_path: Path) -> None:
    vault = _numbered_vault(tmp_path / "vault", COUNT)
    settings = make_settings(vault)
    index_vault(vault)
    index_dir = settings.index_dir()
    _rewrite_unnoticed(vault / "n00/note-0007.md", "kestrel", "ospreys")
    before = (generation(settings), KeywordIndex(index_dir).state())
    kestrels = search_paths(settings, "kestrel", limit=20)
    shadow_db = shadow_dir(index_dir) / Store.FILENAME

    # Killed once the half-built store holds its first batch of 500 notes: no chance to
    # clean up at all.
    hold = Hold(tmp_path / "hold")
    proc = _start_forced_index(vault, cli_env(**hold.env("index:500")))
    hold.kill_held(proc)
    assert _count(shadow_db, "files") == 500

    assert shadow_dir(index_dir).is_dir()  # left behind, for the next run to remove
    assert (generation(settings), KeywordIndex(index_dir).state()) == before
    assert search_paths(settings, "kestrel", limit=20) == kestrels
    assert search_paths(settings, "ospreys") == []
    assert run_json("--vault", vault, "memory", "status", "--json")["files"] == COUNT

    # The next run, forced or not, removes it; this one has nothing else to do.
    report = run_json("--vault", vault, "memory", "index", "--json")
    assert not shadow_dir(index_dir).exists()
    assert report["unchanged"] == COUNT and not report["keyword_rebuilt"]
    assert generation(settings) == before[0]
    run_apus("--vault", vault, "memory", "index", "--force")
    assert search_paths(settings, "ospreys") == ["n00/note-0007.md"]


# -- with vectors (the tiny real GGUF behind the managed server) ------------------------------


@pytest.fixture
def model_settings(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """A vault of 300 one-chunk notes, indexed with the tiny model; the server is stopped after."""
    vault = tmp_path / "vault"
    topics = ["garden", "coffee", "python", "water", "house", "light", "tree", "dog"]
    for i in range(300):
        topic = topics[i % len(topics)]
        write_note(vault, f"notes/n{i:03d}.md", f"# Note {i}\n\nA {topic} note, marker{i:03d}.\n")
    settings = local_model_settings(vault, tiny_model, monkeypatch)
    report = sync(settings)
    assert report.embedding.state == "done" and report.embedded == report.chunks == 300
    yield settings
    resolution = resolve_provider(settings.search)
    if resolution.embedder is not None:
        resolution.embedder.describe()
        resolution.embedder.close()


def test_force_embeds_only_new_text_and_open_readers_follow_the_swap(
    model_settings: Settings,
) -> None:
    vault = model_settings.vault_path()
    with Memory(settings=model_settings) as reader:  # long-lived, as the app keeps one
        hybrid = SearchOptions(mode="hybrid", limit=5)
        assert reader.search("marker007", hybrid).legs["vector"].ran
        _rewrite_unnoticed(vault / "notes/n007.md", "marker007", "kittiwake")

        forced = sync(
            model_settings, SyncRequest(force=True)
        )  # another session, as another process would

        # Only the one new text went to the model; every other vector came from the cache.
        assert forced.embedding.state == "done"
        assert (forced.embedded, forced.chunks) == (1, 300)
        response = reader.search("kittiwake", hybrid)
        assert response.legs["vector"].ran, response.legs["vector"].reason
        [hit] = [h for h in response.hits if h.path == "notes/n007.md"]
        # The rewritten chunk has a new id, which only the new vectors.faiss holds: the
        # reader found it by vector too, so it reopened FAISS after the swap.
        assert set(hit.legs) >= {"keyword", "vector"}
        assert reader.embeddings().state == "ready"
        assert reader.search("marker007", SearchOptions(mode="keyword")).hits == []


def test_embeddings_of_a_killed_forced_rebuild_are_kept(
    model_settings: Settings, tmp_path: Path
) -> None:
    vault = model_settings.vault_path()
    for path in sorted((vault / "notes").iterdir()):
        path.write_text(path.read_text(encoding="utf-8") + "Seen again.\n", encoding="utf-8")
    index_dir = model_settings.index_dir()
    live_cache = _count(index_dir / Store.FILENAME, "embedding_cache")
    shadow_db = shadow_dir(index_dir) / Store.FILENAME

    # Killed once the half-built store has committed two checkpoints (16 chunks each) of
    # the new texts, and before it embeds a third.
    hold = Hold(tmp_path / "hold")
    proc = _start_forced_index(vault, {**os.environ, **hold.env("embed:32")})
    hold.kill_held(proc)
    salvaged = _count(shadow_db, "embedding_cache") - live_cache
    assert salvaged == 32

    report = run_json(
        "--vault", vault, "memory", "index", "--json", env=dict(os.environ), timeout=600
    )
    assert not shadow_dir(index_dir).exists()
    assert report["changed"] == 300
    # What the killed run embedded came back from the cache: only the rest was embedded.
    assert report["embedded"] == 300 - salvaged
    assert report["embedding"]["state"] == "done"
