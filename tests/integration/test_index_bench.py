"""`apus bench index`: a cold index, a no-change re-sync and a bare Whoosh writer, on a
scratch index that leaves the corpus as it was."""

from __future__ import annotations

import re
from pathlib import Path

from support.vaults import make_settings, run_apus, sync, vault_digest, write_note


def test_the_index_benchmark_reports_the_corpus_it_indexed(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for number in range(15):
        sections = "\n\n".join(f"## Part {p}\n\n" + "word " * 120 for p in range(number % 3 + 1))
        write_note(corpus, f"notes/n{number:02}.md", f"# Note {number}\n\n{sections}\n")
    before = vault_digest(corpus)
    out = run_apus("bench", "index", "--corpus", corpus, timeout=300).stdout
    assert vault_digest(corpus) == before  # a benchmark only reads the corpus
    # The same counts as the index Apus itself makes of the corpus.
    clean = sync(make_settings(corpus, memory__search__store__path=str(tmp_path / "index")))
    assert re.search(rf"^files\s+{clean.files}$", out, re.M), out
    assert re.search(rf"^chunks\s+{clean.chunks}$", out, re.M), out
    # The references write the very chunks Apus made, and every figure has its CPU time.
    bare = rf"^bare Whoosh writer\s+[\d.]+ s for {clean.files} files, "
    bare += rf"the same {clean.chunks} chunks"
    assert re.search(rf"{bare} \(CPU [\d.]+ s", out, re.M), out
    assert re.search(r"^FTS5 insert\s+[\d.]+ s, the same chunks \(CPU [\d.]+ s\)$", out, re.M), out
    assert re.search(r"^cold index\s+[\d.]+ s \(CPU [\d.]+ s\)$", out, re.M), out
    assert re.search(r"^rounds\s+3 \(interleaved; medians\)$", out, re.M), out
    for label in ("cold index", "no-change re-sync"):
        assert re.search(rf"^{label}\s+[\d.]+ s", out, re.M), (label, out)
    assert re.search(r"^overhead vs bare\s+[\d.]+x$", out, re.M), out
