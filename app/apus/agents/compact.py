"""A search answer as a model reads it: one line per passage in the text content (the
structured content keeps every field), and an answer held to a size the agent asked for.

A client hands the text content to the model; indented JSON there doubled the answer and
spent most of it on field names. `fit` trims every snippet to one common length, the
longest that lets the whole answer (text and structured content alike) fit `maxChars`, and
leaves out the lowest passages only when even short snippets do not fit.
"""

from __future__ import annotations

import json
from typing import Any

from apus.agents.answers import Passage, SearchAnswer
from apus.search.vector_leg import coverage_sentence

# Below this a snippet no longer says what the passage is about: drop a passage instead.
MIN_SNIPPET = 40
# A snippet's width in an answer, in display columns: the median 10-hit answer (text and
# structured content as sent) was 8.3 KB on English tldr queries, 10.9 KB on Chinese,
# Japanese and Korean ones and 9.5 KB on LoCoMo questions at 240 characters; at 150 columns
# (with the lines left to the citation) each is within 6 KB, the length of a search result
# line elsewhere (tests/support/mcp_wire.py --vault ... --queries ...).
SNIPPET_COLUMNS = 150
# The smallest budget an answer fits in: the header and one short passage.
MIN_MAX_CHARS = 300


def structured(answer: SearchAnswer) -> dict[str, Any]:
    return answer.model_dump(mode="json", by_alias=True, exclude_none=True)


def render_text(answer: SearchAnswer) -> str:
    """Header, one `citation  score  snippet` line per passage (a weak one ends `(weak)`,
    one found among partial vectors `(partial vectors)`), then notices and what did not run."""
    if answer.unavailable:
        return f"Search is unavailable: {answer.error} Fix: {answer.action}"
    lines = [_header(answer)]
    lines += [
        f"{p.citation}  {p.score:.3f}  {_one_line(p.snippet)}{_marks(p)}" for p in answer.results
    ]
    window = answer.timeWindow
    if window is not None:
        lines.append(f"Time window ({window.source}: {window.text!r}): {window.describe()}")
    if answer.indexing is not None:
        lines.append(f"Still indexing: {answer.indexing.describe()}")
    if answer.coverage is not None:
        lines.append(
            f"Still embedding: {coverage_sentence(answer.coverage)}; the rest are found by "
            "their words."
        )
    lines += [f"Note: {notice}" for notice in answer.notices or ()]
    if answer.fallback is not None:
        fix = f" Fix: {answer.fallback.fix}" if answer.fallback.fix else ""
        lines.append(f"Search by meaning did not run: {answer.fallback.reason}.{fix}")
    return "\n".join(lines)


def _header(answer: SearchAnswer) -> str:
    count = len(answer.results)
    if count == 0:
        return f"No passages found ({answer.mode} search)."
    noun = "passage" if count == 1 else "passages"
    return (
        f"{count} {noun}, best first ({answer.mode} search); read one with "
        "memory_get(path=<citation>)."
    )


def _marks(passage: Passage) -> str:
    weak = "  (weak)" if passage.weak else ""
    return weak + ("  (partial vectors)" if passage.partialVectors else "")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def size(answer: SearchAnswer) -> int:
    """Characters of the larger of the two forms a client may hand the model."""
    body = json.dumps(structured(answer), ensure_ascii=False, separators=(",", ":"))
    return max(len(render_text(answer)), len(body))


def fit(answer: SearchAnswer, max_chars: int) -> SearchAnswer:
    """`answer` within `max_chars`: snippets cut to the longest common length that fits,
    and the lowest passages left out while even `MIN_SNIPPET` does not."""
    if size(answer) <= max_chars:
        return answer
    results = list(answer.results)
    while results:
        longest = max(len(p.snippet) for p in results)
        best: SearchAnswer | None = None
        low, high = MIN_SNIPPET, max(MIN_SNIPPET, longest)
        while low <= high:  # the longest cut that fits
            cut = (low + high) // 2
            candidate = _trimmed(answer, results, cut, max_chars)
            if size(candidate) <= max_chars:
                best, low = candidate, cut + 1
            else:
                high = cut - 1
        if best is not None:
            return best
        results.pop()
    return _trimmed(answer, [], MIN_SNIPPET, max_chars)


def _trimmed(
    answer: SearchAnswer, results: list[Passage], cut: int, max_chars: int
) -> SearchAnswer:
    dropped = len(answer.results) - len(results)
    shortened = [_cut(p, cut) for p in results]
    changed = sum(1 for a, b in zip(results, shortened, strict=True) if a.snippet != b.snippet)
    said = []
    if changed:
        said.append(f"{changed} {_plural(changed, 'snippet')} cut to {cut} characters")
    if dropped:
        said.append(
            f"{dropped} lower {_plural(dropped, 'passage')} left out (ask for fewer, or a "
            "larger maxChars)"
        )
    notices = [*(answer.notices or ()), f"maxChars {max_chars}: " + "; ".join(said)]
    return answer.model_copy(update={"results": shortened, "notices": notices})


def _plural(count: int, noun: str) -> str:
    return noun if count == 1 else noun + "s"


def _cut(passage: Passage, cut: int) -> Passage:
    if len(passage.snippet) <= cut:
        return passage
    return passage.model_copy(update={"snippet": passage.snippet[: cut - 1].rstrip() + "…"})
