"""`apus bench tokens`: what the chunks of a vault cost in model tokens, and where they go.

The vault is scanned, read, parsed and chunked as a sync does (the configured chunk size and
overlap), and every passage is written as the embedder sends it (the family's task prefix,
the note's title in it). Each passage's model tokens are then split into the body (lines
said once), the overlap (leading lines repeated from the chunk before), the note's title in
the prefix, the rest of the prefix (the template, an untitled passage's "none") and the
sequence's special tokens; passages whose text sent is identical to an earlier one (a
template, boilerplate, a copied note) are counted apart, since a sync embeds them once.

Tokens are counted by the model's own tokenizer (the GGUF loaded vocabulary-only: no
weights, no embedding) or, without a model, by the chunker's estimate. Other overlaps can
be counted in the same run over the same notes, for a before/after.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from apus.config import load_settings
from apus.embed.prefixes import PrefixScheme, detect_family, scheme_for_family
from apus.indexing.embedding import title_for_prefix
from apus.vault.chunk import Chunk, iter_chunks
from apus.vault.markdown import parse_note
from apus.vault.scan import read_note_text, scan_roots
from apus.vault.text import count_tokens

Counter = Callable[[str], int]


@dataclass(frozen=True)
class Tokenizer:
    """How tokens are counted: `count` (text only) and the special tokens of one sequence."""

    label: str
    count: Counter
    specials: int = 0
    family: str = "embeddinggemma"  # the prefix family the model's metadata names


def model_tokenizer(model: Path) -> Tokenizer:
    """The GGUF's own tokenizer, its vocabulary loaded without the weights."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(model), vocab_only=True, verbose=False)

    def count(text: str) -> int:
        return len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    # add_bos asks for every special the vocabulary adds to a sequence (BOS, and EOS too
    # where the model wants one), as the server does for each passage it embeds.
    specials = len(llm.tokenize(b"", add_bos=True, special=False))
    return Tokenizer(
        f"model tokenizer of {model.name}", count, specials, detect_family(llm.metadata)
    )


ESTIMATE = Tokenizer("the chunker's estimate (no model given)", count_tokens)


@dataclass
class TokenCounts:
    """The tokens of every passage sent under one chunking."""

    overlap_setting: int
    passages: int = 0
    body: int = 0
    overlap: int = 0
    title: int = 0
    template: int = 0
    specials: int = 0
    duplicate_passages: int = 0
    duplicate_tokens: int = 0  # of passages identical to an earlier one (sent once)
    title_repeats_heading: int = 0  # passages whose titled prefix repeats their first line
    longest: int = 0
    seen: set[bytes] = field(default_factory=set, repr=False)  # digests of the texts sent

    @property
    def total(self) -> int:
        return self.body + self.overlap + self.title + self.template + self.specials

    @property
    def sent(self) -> int:
        """What the model is given once identical passages are embedded once."""
        return self.total - self.duplicate_tokens


@dataclass(frozen=True)
class TokenBenchResult:
    vault: Path
    files: int
    skipped: int
    max_tokens: int
    tokenizer: str
    scheme: str
    rows: list[TokenCounts]  # the configured overlap first


def repeated_text(previous: Chunk | None, chunk: Chunk) -> str:
    """The leading lines of `chunk` that `previous` (the chunk before it) also holds."""
    if previous is None or not chunk.start_line <= previous.end_line < chunk.end_line:
        return ""
    repeated = previous.end_line - chunk.start_line + 1
    return "\n".join(chunk.text.split("\n")[:repeated])


def count_note(
    counts: TokenCounts,
    chunks: Iterator[Chunk],
    title: str | None,
    scheme: PrefixScheme,
    tokenizer: Tokenizer,
) -> None:
    """Add one note's passages, as sent, to `counts`."""
    untitled = tokenizer.count(scheme.apply_document("", None))
    previous: Chunk | None = None
    for chunk in chunks:
        sent = scheme.apply_document(chunk.text, title)
        text_tokens, sent_tokens = tokenizer.count(chunk.text), tokenizer.count(sent)
        repeated = repeated_text(previous, chunk)
        overlap = tokenizer.count(repeated) if repeated else 0
        prefix = sent_tokens - text_tokens
        named = max(prefix - untitled, 0) if title else 0
        counts.passages += 1
        counts.overlap += overlap
        counts.body += text_tokens - overlap
        counts.title += named
        counts.template += prefix - named
        counts.specials += tokenizer.specials
        whole = sent_tokens + tokenizer.specials
        counts.longest = max(counts.longest, whole)
        if title and chunk.text.split("\n", 1)[0].lstrip("# ").strip() == title:
            counts.title_repeats_heading += 1
        digest = hashlib.sha256(sent.encode("utf-8")).digest()
        if digest in counts.seen:
            counts.duplicate_passages += 1
            counts.duplicate_tokens += whole
        counts.seen.add(digest)
        previous = chunk


def run_token_bench(
    vault: Path,
    *,
    tokenizer: Tokenizer = ESTIMATE,
    overlaps: Sequence[int] = (),
    prefix_scheme: str = "",
) -> TokenBenchResult:
    """Count the vault's passages under the configured chunking and each of `overlaps`."""
    settings = load_settings(overrides={"vault": str(vault)})
    chunking = settings.search.chunking
    settings_overlaps = [chunking.overlap, *(o for o in overlaps if o != chunking.overlap)]
    scheme = scheme_for_family(
        prefix_scheme or settings.search.local.prefix_scheme or tokenizer.family
    )
    rows = [TokenCounts(overlap) for overlap in settings_overlaps]
    max_bytes = settings.search.sync.max_file_bytes
    scan = scan_roots(vault, max_file_bytes=max_bytes)
    skipped = len(scan.skipped)
    for scanned in scan.files:
        read = read_note_text(scanned.abs_path, max_file_bytes=max_bytes)
        if read.text is None:
            skipped += 1
            continue
        note = parse_note(read.text, fallback_title=Path(scanned.rel_path).stem)
        title = title_for_prefix(note.title, scanned.rel_path)
        for row in rows:
            chunks = iter_chunks(note, max_tokens=chunking.tokens, overlap=row.overlap_setting)
            count_note(row, chunks, title, scheme, tokenizer)
    return TokenBenchResult(
        vault, len(scan.files), skipped, chunking.tokens, tokenizer.label, scheme.label, rows
    )


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def token_table(result: TokenBenchResult) -> list[str]:
    """The figures of `apus bench tokens`: the configured chunking, then each other overlap."""
    lines = [
        f"{result.vault}: {result.files} notes ({result.skipped} skipped), chunks of at most "
        f"{result.max_tokens} estimated tokens; prefix {result.scheme}; counted by "
        f"{result.tokenizer}",
    ]
    first = result.rows[0]
    for row in result.rows:
        mark = " (configured)" if row is first else ""
        total = row.total
        lines += [
            f"overlap {row.overlap_setting}{mark}: {row.passages} passages, {total} tokens "
            f"(mean {total / max(row.passages, 1):.0f}, longest {row.longest})",
            f"  body                 {row.body:>10}  {_share(row.body, total)}",
            f"  overlap              {row.overlap:>10}  {_share(row.overlap, total)}",
            f"  title in prefix      {row.title:>10}  {_share(row.title, total)}",
            f"  prefix template      {row.template:>10}  {_share(row.template, total)}",
            f"  special tokens       {row.specials:>10}  {_share(row.specials, total)}",
            f"  identical passages   {row.duplicate_tokens:>10}  "
            f"{_share(row.duplicate_tokens, total)}  ({row.duplicate_passages} passages, "
            "embedded once)",
            f"  sent to the model    {row.sent:>10}  {_share(row.sent, total)}",
            f"  titled passages whose first line is the title again: {row.title_repeats_heading}",
        ]
        if row is not first and first.sent:
            lines.append(f"  sent vs configured   {row.sent / first.sent:10.3f}x")
            # What a switch to this overlap would embed again: texts the index does not hold.
            lines.append(
                f"  distinct texts not sent under the configured overlap: "
                f"{len(row.seen - first.seen)} of {len(row.seen)}"
            )
    return lines
