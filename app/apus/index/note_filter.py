"""Which notes a search may return: path prefixes, a date range, tags, the corpus.

A filter is applied inside retrieval (the legs only rank notes it admits), so a filter whose
matches would all rank below the unfiltered top candidates still finds them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from apus.vault.text import fold

Source = str  # "memory" (Markdown notes) or "sessions" (agent transcripts)


@dataclass(frozen=True)
class NoteFilter:
    """Empty fields do not restrict. Prefixes are alternatives; tags must all be present."""

    path_prefixes: tuple[str, ...] = ()
    since: dt.date | None = None  # inclusive, by the note's date (see the store's `dated`)
    until: dt.date | None = None  # inclusive
    tags: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ("memory",)
    exclude_paths: tuple[str, ...] = ()

    @property
    def narrows(self) -> bool:
        """Whether it admits fewer than all memory notes (the unfiltered default)."""
        return bool(
            self.path_prefixes
            or self.since
            or self.until
            or self.tags
            or self.exclude_paths
            or self.sources != ("memory",)
        )

    def where(self) -> tuple[str, list[object]]:
        """An SQL condition over `files` and its parameters."""
        clauses: list[str] = []
        params: list[object] = []
        if self.sources:
            clauses.append(f"source IN ({','.join('?' * len(self.sources))})")
            params.extend(self.sources)
        if self.path_prefixes:
            alternatives = []
            for prefix in self.path_prefixes:
                alternatives.append("substr(path, 1, ?) = ?")
                params.extend([len(prefix), prefix])
            clauses.append(f"({' OR '.join(alternatives)})")
        if self.since is not None:
            clauses.append("dated >= ?")
            params.append(self.since.isoformat())
        if self.until is not None:
            clauses.append("dated <= ?")
            params.append(self.until.isoformat())
        for tag in self.tags:
            clauses.append("EXISTS (SELECT 1 FROM json_each(files.tags) WHERE value = ?)")
            params.append(fold_tag(tag))
        if self.exclude_paths:
            clauses.append(f"path NOT IN ({','.join('?' * len(self.exclude_paths))})")
            params.extend(self.exclude_paths)
        return " AND ".join(clauses) or "1", params


def fold_tag(tag: str) -> str:
    """Tags match without regard to case, accents or a leading `#`."""
    return fold(tag.strip().lstrip("#").strip())


def normalise_prefix(prefix: str) -> str:
    """A vault-relative path prefix as stored: forward slashes, no leading `./` or `/`."""
    text = prefix.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text.lstrip("/")
