"""How this run of the app searches: ranking toggles, conversations, the related panel."""

from __future__ import annotations

from dataclasses import dataclass

from apus.index.note_filter import CORPUS_SOURCES, NoteFilter
from apus.search.options import SearchOptions


@dataclass
class SearchPreferences:
    """Set from the keyboard and palette for this run only; the settings are the defaults."""

    mmr: bool | None = None  # None: as the settings say
    recency: bool | None = None
    include_conversations: bool = False  # search agent transcripts too
    show_related: bool = False  # the related-notes panel under the preview
    show_timings: bool = True  # search timings in the query row

    def options(self) -> SearchOptions:
        """What the toggles ask for: one never touched stays None, for the Searcher to
        resolve against the settings once (as every face does)."""
        corpus = "all" if self.include_conversations else "memory"
        return SearchOptions(
            mode="hybrid",
            mmr=self.mmr,
            recency=self.recency,
            filters=NoteFilter(sources=CORPUS_SOURCES[corpus]),
        )
