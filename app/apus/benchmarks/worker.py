"""One benchmark step in its own process; prints a JSON line of figures."""

from __future__ import annotations

import argparse
import json
import os
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
    started = time.perf_counter()
    report = Indexer(settings).sync()
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "files": report.files,
        "chunks": report.chunks,
        "added": report.added,
        "skipped": len(report.skipped),
    }


def _bare_whoosh(corpus: Path, index_dir: Path) -> dict[str, float]:
    """The reference: every Markdown file as one document, Whoosh's stock analyzer."""
    from whoosh import index as whoosh_index
    from whoosh.fields import ID, TEXT, Schema

    index_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    ix = whoosh_index.create_in(str(index_dir), Schema(path=ID(stored=True), body=TEXT))
    writer = ix.writer(limitmb=256)
    files = 0
    for root, _dirs, names in os.walk(corpus):
        for name in names:
            if name.endswith(".md"):
                path = Path(root) / name
                text = path.read_bytes().decode("utf-8", errors="replace")
                writer.add_document(path=str(path), body=text)
                files += 1
    writer.commit()
    return {"seconds": time.perf_counter() - started, "files": files}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["apus-index", "bare-whoosh"])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.step == "apus-index":
        figures = _apus_index(args.corpus, args.index_dir)
    else:
        figures = _bare_whoosh(args.corpus, args.index_dir)
    figures["peak_rss_mb"] = peak_rss_mb()
    sys.stdout.write(json.dumps(figures) + "\n")


if __name__ == "__main__":
    main()
