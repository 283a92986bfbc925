"""Token-budgeted, structure-aware chunks with overlap and file line ranges.

Chunks are made as they are consumed (`iter_chunks`): the pieces, the packing and the slices
of a huge line are generators, so a 300 MB single-line note is cut into chunks that the
store writes one by one, and memory holds the note's text once, not again in its chunks.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from apus.vault.markdown import FenceTracker, ParsedNote, heading, split_lines
from apus.vault.text import count_tenths, count_tokens, tokens_of

# Bump when chunk boundaries change: stored chunks from another version are re-made.
CHUNKING_VERSION = 1

# Cutting a chunk early at a heading is worth it only while the chunk stays at least this
# full; otherwise notes with many short sections would become many tiny chunks.
_HEADING_CUT_MIN_FILL = 0.5


@dataclass(frozen=True)
class Chunk:
    """A passage of a note sized for one embedding, and where it sits in the file."""

    ordinal: int  # 0-based position within the note
    text: str
    start_line: int  # 1-based, inclusive, line numbers of the file
    end_line: int
    heading_path: tuple[str, ...]  # e.g. ("Project Apus", "Design")
    tokens: int


class _Block(NamedTuple):
    """Lines [start, end) of the body that belong together: a heading, fence or paragraph."""

    start: int
    end: int
    is_heading: bool = False


class _Piece(NamedTuple):
    """The unit of packing: a whole block, one line of a block too big for a chunk, the
    overlap carried from the previous chunk, or (`part` set) a slice of one huge line."""

    start: int
    end: int
    tokens: int
    # Its exact cost before rounding (`count_tenths`): a chunk of whole lines costs the sum
    # of its pieces' tenths, rounded up once, so its text is never counted again.
    tenths: int
    is_heading: bool = False
    is_overlap: bool = False
    part: str | None = None


class _LineTokens:
    """Costs of single lines (in tenths, `count_tenths`), computed only for lines that
    need them."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self._tenths: list[int | None] = [None] * len(lines)

    def __getitem__(self, index: int) -> int:
        """The line's token count."""
        return tokens_of(self.tenths(index))

    def tenths(self, index: int) -> int:
        count = self._tenths[index]
        if count is None:
            count = self._tenths[index] = count_tenths(self._lines[index])
        return count


def _blocks(lines: list[str]) -> tuple[list[_Block], list[tuple[str, ...]]]:
    """The blocks of the body, and the heading path in effect at each line."""
    blocks: list[_Block] = []
    paths: list[tuple[str, ...]] = []
    stack: list[tuple[int, str]] = []
    path: tuple[str, ...] = ()
    fences = FenceTracker()
    open_start: int | None = None  # first line of the paragraph or fence being read

    def close(end: int) -> None:
        nonlocal open_start
        if open_start is not None:
            blocks.append(_Block(open_start, end))
            open_start = None

    for index, line in enumerate(lines):
        if fences.inside:
            fences.feed(line)
            paths.append(path)
            if not fences.inside:
                close(index + 1)
            continue
        # A fence opens and a heading starts within a line's first four characters (up to
        # three spaces of indent): most lines need neither pattern tried.
        lead = line[:4]
        if ("`" in lead or "~" in lead) and fences.feed(line):
            close(index)
            open_start = index
            paths.append(path)
            continue
        found = heading(line) if "#" in lead else None
        if found is not None:
            close(index)
            level, title = found
            while stack and stack[-1][0] >= level:
                stack.pop()
            if title:
                stack.append((level, title))
            path = tuple(text for _, text in stack)
            blocks.append(_Block(index, index + 1, is_heading=True))
        elif not line.strip():
            close(index)
        elif open_start is None:
            open_start = index
        paths.append(path)
    close(len(lines))
    return blocks, paths


def _fitting_end(line: str, start: int, budget: int) -> int:
    """An end, as late as cheaply found, such that line[start:end] costs at most `budget`.

    `count_tokens` is subadditive (the cost of a concatenation is at most the sum of the
    costs of its parts), so adding up the costs of consecutive segments bounds the cost of
    the whole without recounting it; segments shrink when the next one does not fit.
    Always advances by at least one character.
    """
    end, total, step = start, 0, max(budget, 1)
    while end < len(line) and step:
        segment_end = min(end + step, len(line))
        cost = count_tokens(line[end:segment_end])
        if total + cost <= budget:
            total += cost
            end = segment_end
        else:
            step //= 2
    return max(end, start + 1)


def _split_line(line: str, budget: int) -> Iterator[str]:
    """Slices of one over-long line (minified text, CJK without breaks), each within budget,
    made one at a time."""
    start = 0
    while start < len(line):
        end = _fitting_end(line, start, budget)
        if end < len(line):
            # Prefer to cut after a space in the later half, and never before a combining
            # mark, so words and characters stay whole where the budget allows.
            space = line.rfind(" ", start + (end - start) // 2, end)
            if space != -1:
                end = space + 1
            while end - start > 1 and unicodedata.category(line[end])[0] == "M":
                end -= 1
        yield line[start:end]
        start = end


def _pieces(
    lines: list[str], blocks: list[_Block], max_tokens: int, line_tokens: _LineTokens
) -> Iterator[_Piece]:
    for block in blocks:
        if block.end - block.start == 1:
            tenths = line_tokens.tenths(block.start)
        else:
            tenths = count_tenths("\n".join(lines[block.start : block.end]))
        tokens = tokens_of(tenths)
        if tokens <= max_tokens:
            yield _Piece(block.start, block.end, tokens, tenths, is_heading=block.is_heading)
            continue
        for index in range(block.start, block.end):
            if not lines[index].strip():
                continue
            tenths = line_tokens.tenths(index)
            tokens = tokens_of(tenths)
            if tokens <= max_tokens:
                yield _Piece(index, index + 1, tokens, tenths)
                continue
            for part in _split_line(lines[index], max_tokens):
                tenths = count_tenths(part)
                yield _Piece(index, index + 1, tokens_of(tenths), tenths, part=part)


def _heading_cut(group: list[_Piece], max_tokens: int) -> int | None:
    """Where to end `group` early so the next chunk starts at a heading, if anywhere."""
    trailing = len(group)
    while trailing > 0 and group[trailing - 1].is_heading:
        trailing -= 1
    has_content = [False] * (len(group) + 1)
    for index, piece in enumerate(group):
        has_content[index + 1] = has_content[index] or not piece.is_overlap
    # A chunk should never end with the heading of a section it does not contain.
    if 0 < trailing < len(group) and has_content[trailing]:
        return trailing
    best: int | None = None
    before = 0
    for index, piece in enumerate(group):
        if piece.is_heading and has_content[index] and before >= max_tokens * _HEADING_CUT_MIN_FILL:
            best = index
        before += piece.tokens
    return best


def _overlap(
    group: list[_Piece], budget: int, lines: list[str], line_tokens: _LineTokens
) -> list[_Piece]:
    """Whole trailing lines of `group` worth at most `budget` tokens, to start the next chunk.

    The first line of `group` is never included, so the next chunk always starts later.
    """
    first, end = group[0].start, group[-1].end
    start, total, tenths = end, 0, 0
    while start - 1 > first and total + line_tokens[start - 1] <= budget:
        start -= 1
        total += line_tokens[start]
        tenths += line_tokens.tenths(start)
    while start < end and not lines[start].strip():
        start += 1  # blank: costs nothing
    if start == end:
        return []
    return [_Piece(start, end, total, tenths, is_overlap=True)]


def _pack(
    pieces: Iterable[_Piece],
    lines: list[str],
    max_tokens: int,
    overlap: int,
    line_tokens: _LineTokens,
    *,
    entries: bool = False,
) -> Iterator[list[_Piece]]:
    group: list[_Piece] = []
    tokens = 0
    upcoming = iter(pieces)
    piece = next(upcoming, None)
    while piece is not None:
        if entries and piece.is_heading and any(not kept.is_heading for kept in group):
            # A note of entries: each heading starts one, and one entry is one passage.
            yield group
            group, tokens = [], 0
        if piece.part is not None:
            # A slice of a huge line is a chunk of its own: its text is not whole lines.
            if group:
                yield group
            yield [piece]
            group, tokens = [], 0
            piece = next(upcoming, None)
            continue
        if not group or tokens + piece.tokens <= max_tokens:
            group.append(piece)
            tokens += piece.tokens
            piece = next(upcoming, None)
            continue
        cut = _heading_cut(group, max_tokens)
        if cut is not None:
            yield group[:cut]
            group = group[cut:]
            tokens = sum(kept.tokens for kept in group)
            continue  # the same piece again, against what is left of the group
        yield group
        # A heading starts a new topic; carrying the previous section's tail would blur it.
        budget = min(overlap, max_tokens - piece.tokens)
        group = [] if piece.is_heading else _overlap(group, budget, lines, line_tokens)
        tokens = sum(kept.tokens for kept in group)
    if group:
        yield group


def _heading_path(group: list[_Piece], paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The headings in effect where the chunk's content starts, past its leading headings."""
    for piece in group:
        if not piece.is_heading:
            return paths[piece.start]
    return paths[group[-1].start]


def chunk_note(
    note: ParsedNote, *, max_tokens: int = 400, overlap: int = 80, entries: bool = False
) -> list[Chunk]:
    """Every chunk of `note` (see `iter_chunks`), in a list."""
    return list(iter_chunks(note, max_tokens=max_tokens, overlap=overlap, entries=entries))


def iter_chunks(
    note: ParsedNote, *, max_tokens: int = 400, overlap: int = 80, entries: bool = False
) -> Iterator[Chunk]:
    """Cut the body of `note` into chunks of at most `max_tokens` (as `count_tokens` counts),
    made as they are consumed.

    Blocks (headings, fenced code, paragraphs) stay whole when they fit; chunks preferably
    end before a heading; each chunk after a cut inside a section repeats up to `overlap`
    tokens of whole trailing lines of the one before. Only a single character that alone
    costs more than `max_tokens` can exceed it. With `entries` (a note of entries, such as
    MEMORY.md), every heading starts a chunk: no entry shares a passage with its neighbours.
    """
    if max_tokens < 1 or overlap < 0:
        raise ValueError(f"need max_tokens >= 1 and overlap >= 0, got {max_tokens}, {overlap}")
    return _chunks(note, max_tokens, overlap, entries)


# Where `str.splitlines` breaks a line besides \r\n, \r and \n, the only breaks of a note.
_OTHER_BREAKS = ("\v", "\f", "\x1c", "\x1d", "\x1e")
_OTHER_UNICODE_BREAKS = (*_OTHER_BREAKS, "\x85", "\u2028", "\u2029")


def _body_lines(body: str) -> list[str]:
    if "\n" not in body and "\r" not in body:
        return [body] if body else []  # one line: the body itself, not a copy of it
    others = _OTHER_BREAKS if body.isascii() else _OTHER_UNICODE_BREAKS
    if not any(other in body for other in others):
        return body.splitlines()  # the same lines as below, without a pattern per line
    return [line.rstrip("\r\n") for line in split_lines(body)]


def _chunks(note: ParsedNote, max_tokens: int, overlap: int, entries: bool) -> Iterator[Chunk]:
    lines = _body_lines(note.body)
    blocks, paths = _blocks(lines)
    line_tokens = _LineTokens(lines)
    pieces = _pieces(lines, blocks, max_tokens, line_tokens)
    packed = _pack(pieces, lines, max_tokens, overlap, line_tokens, entries=entries)
    for ordinal, group in enumerate(packed):
        first, last = group[0], group[-1]
        if first.part is not None:
            text, tokens = first.part, first.tokens  # counted when it was cut
        else:
            # Whole lines: the pieces' lines, and blank ones between them (which cost
            # nothing), so the count of the text is the pieces' tenths rounded up once.
            text = "\n".join(lines[first.start : last.end])
            tokens = tokens_of(sum(piece.tenths for piece in group))
        yield Chunk(
            ordinal=ordinal,
            text=text,
            start_line=first.start + note.body_start_line,
            end_line=last.end - 1 + note.body_start_line,
            heading_path=_heading_path(group, paths),
            tokens=tokens,
        )
