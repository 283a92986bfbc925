"""One benchmark step in its own process; prints a JSON line of figures."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from apus.benchmarks.measure import peak_rss_mb


def _apus_index(vault: Path, index_dir: Path) -> dict[str, float]:
    from apus.config import load_settings
    from apus.indexing.sync import Indexer

    settings = load_settings(
        overrides={
            "vault": str(vault),
            "memory.search.provider": "none",
            "memory.search.store.path": str(index_dir),
        }
    )
    started, cpu = time.perf_counter(), time.process_time()
    report = Indexer(settings).sync()
    return {
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu,
        "files": report.files,
        "chunks": report.chunks,
        "added": report.added,
        "skipped": len(report.skipped),
    }


def _stored_chunks(apus_dir: Path) -> list[tuple[str, str]]:
    """(note path, chunk text) of every chunk an Apus index holds, in store order."""
    from apus.index.store import Store

    store = Store(apus_dir, readonly=True)
    try:
        return [(chunk.path, chunk.text) for chunk in store.iter_chunks()]
    finally:
        store.close()


def _bare_whoosh(chunks: list[tuple[str, str]], index_dir: Path) -> dict[str, float]:
    """The reference: the same chunks, one document each, Whoosh's stock analyzer."""
    from whoosh import index as whoosh_index
    from whoosh.fields import ID, TEXT, Schema

    index_dir.mkdir(parents=True, exist_ok=True)
    started, cpu = time.perf_counter(), time.process_time()
    ix = whoosh_index.create_in(str(index_dir), Schema(path=ID(stored=True), body=TEXT))
    writer = ix.writer(limitmb=256)
    for path, text in chunks:
        writer.add_document(path=path, body=text)
    writer.commit()
    return {
        "seconds": time.perf_counter() - started,
        "cpu_seconds": time.process_time() - cpu,
        "files": len({path for path, _ in chunks}),
    }


def _fts5(chunks: list[tuple[str, str]], index_dir: Path) -> dict[str, float]:
    """A floor: the same chunks inserted into an SQLite FTS5 table (C tokenizer, no stems)."""
    import sqlite3

    index_dir.mkdir(parents=True, exist_ok=True)
    started, cpu = time.perf_counter(), time.process_time()
    db = sqlite3.connect(index_dir / "fts.sqlite")
    db.execute("CREATE VIRTUAL TABLE chunks USING fts5(path, body)")
    with db:
        db.executemany("INSERT INTO chunks(path, body) VALUES (?, ?)", chunks)
    db.close()
    return {"seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["apus-index", "bare-whoosh", "fts5"])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, required=True)
    # For the references: the Apus index whose chunks they write.
    parser.add_argument("--chunks-from", type=Path)
    args = parser.parse_args(argv)
    if args.step == "apus-index":
        figures = _apus_index(args.corpus, args.index_dir)
    else:
        if args.chunks_from is None:
            parser.error(f"{args.step} needs --chunks-from")
        chunks = _stored_chunks(args.chunks_from)
        writer = _bare_whoosh if args.step == "bare-whoosh" else _fts5
        figures = writer(chunks, args.index_dir)
    figures["peak_rss_mb"] = peak_rss_mb()
    sys.stdout.write(json.dumps(figures) + "\n")


if __name__ == "__main__":
    main()
