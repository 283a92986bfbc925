"""`apus bench tokens`: the passages a sync sends, counted by the model's tokenizer and split
into body, overlap, prefix and identical passages."""

from __future__ import annotations

import re
from pathlib import Path

from apus.benchmarks.token_bench import model_tokenizer, run_token_bench
from apus.embed.prefixes import scheme_for_family
from apus.indexing.embedding import title_for_prefix
from support.vaults import make_settings, open_store, run_apus, sync, vault_digest, write_note

# Paragraphs of one section: the chunker cuts between them and repeats the last of a chunk.
LONG = "# Trip\n\n" + "\n\n".join(
    f"Day {day} walked along the river, tea at the bridge, notes on birds seen." * 3
    for day in range(40)
)
COPY = "Weekly review: what went well, what to change, what to drop.\n"


def _vault(root: Path) -> Path:
    write_note(root, "trip.md", LONG + "\n")
    write_note(root, "weekly/a.md", COPY)
    write_note(root, "weekly/b.md", COPY)  # sent as the same text: stems are not titles
    write_note(root, "titled.md", "---\ntitle: Garden plans\n---\nTomatoes on the balcony.\n")
    return root


def test_the_counts_are_those_of_the_passages_a_sync_writes(
    tmp_path: Path, tiny_model: Path
) -> None:
    vault = _vault(tmp_path / "vault")
    tokenizer = model_tokenizer(tiny_model)
    result = run_token_bench(vault, tokenizer=tokenizer, overlaps=[0])
    configured, no_overlap = result.rows
    assert (configured.overlap_setting, no_overlap.overlap_setting) == (80, 0)
    # The same passages, as the embedder writes them, from the index a real sync makes.
    settings = make_settings(vault, memory__search__store__path=str(tmp_path / "index"))
    report = sync(settings)
    store = open_store(settings)
    try:
        chunks = list(store.iter_chunks())
    finally:
        store.close()
    scheme = scheme_for_family("embeddinggemma")
    sent = [scheme.apply_document(c.text, title_for_prefix(c.title, c.path)) for c in chunks]
    assert configured.passages == report.chunks == len(sent)
    assert configured.total == sum(tokenizer.count(s) + tokenizer.specials for s in sent)
    assert configured.body + configured.overlap == sum(tokenizer.count(c.text) for c in chunks)
    assert configured.specials == tokenizer.specials * len(sent) > 0
    # The copy is one passage sent twice; the title costs tokens only where there is one.
    assert configured.duplicate_passages == 1
    copy = scheme.apply_document(COPY.strip(), None)
    assert sent.count(copy) == 2
    assert configured.duplicate_tokens == tokenizer.count(copy) + tokenizer.specials
    assert configured.sent == configured.total - configured.duplicate_tokens
    assert configured.title > 0
    # The long note repeats lines at every cut; without overlap nothing is repeated.
    assert configured.overlap > 0 and no_overlap.overlap == 0
    assert no_overlap.total < configured.total
    assert no_overlap.passages <= configured.passages


def test_the_command_prints_every_part_and_reads_only(tmp_path: Path, tiny_model: Path) -> None:
    vault = _vault(tmp_path / "vault")
    before = vault_digest(vault)
    out = run_apus("bench", "tokens", vault, "--model", tiny_model, "--overlap", "40").stdout
    assert vault_digest(vault) == before
    assert re.search(r"^overlap 80 \(configured\): \d+ passages, \d+ tokens", out, re.M), out
    assert re.search(r"^overlap 40: \d+ passages", out, re.M), out
    for part in ("body", "overlap", "title in prefix", "prefix template", "special tokens"):
        assert re.search(rf"^  {part}\s+\d+\s+[\d.]+%$", out, re.M), (part, out)
    assert re.search(r"^  identical passages\s+\d+\s+[\d.]+%\s+\(1 passages", out, re.M), out
    assert "model tokenizer of" in out
    # Without a model, the chunker's estimate counts.
    estimate = run_apus("bench", "tokens", vault).stdout
    assert "the chunker's estimate" in estimate
