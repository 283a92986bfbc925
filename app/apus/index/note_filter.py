"""Which notes a search may return: path prefixes, a date range, tags, the corpus, and which
transcripts the one asking may see.

A filter is applied inside retrieval (the legs only rank notes it admits), so a filter whose
matches would all rank below the unfiltered top candidates still finds them, and a transcript
outside the asker's visibility is never ranked, counted or excerpted.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal

from apus.errors import ApusError
from apus.vault.text import fold

Source = str  # "memory" (Markdown notes) or "sessions" (agent transcripts)
Visibility = Literal["self", "tree", "agent", "all"]
_VISIBILITY_KEY = "tools.sessions.visibility"
# What `--corpus` / `corpus` names, as sources.
CORPUS_SOURCES: dict[str, tuple[Source, ...]] = {
    "memory": ("memory",),
    "sessions": ("sessions",),
    "all": ("memory", "sessions"),
}


# Path prefixes or tags one search takes. SQLite nests each into the query's expression tree,
# whose depth it caps at 1,000: 995 tags alone, or 497 of each at once, measured on a search.
MAX_FILTER_VALUES = 250


class FilterError(ApusError):
    """A filter that cannot be searched with (more values than a search takes)."""


class VisibilityError(ApusError):
    """Transcripts were asked for under a visibility that needs to know who is asking."""


@dataclass(frozen=True)
class Asker:
    """Who is asking for transcripts: an agent id, and the session key (`agent/session`) it
    asks from. Either may be unknown."""

    agent: str | None = None
    session: str | None = None


@dataclass(frozen=True)
class SessionScope:
    """The transcripts an asker may see: `self` its session, `tree` it and the sessions whose
    `parentSession` chain leads to it, `agent` its agent's sessions, `all` every one.

    A scope that lacks what its level needs (no session for `self`) sees nothing; `of` builds
    checked ones and says what is missing.
    """

    visibility: Visibility = "all"
    asker: Asker = field(default_factory=Asker)

    @classmethod
    def of(cls, visibility: Visibility, asker: Asker) -> SessionScope:
        """A scope for `asker`, or a VisibilityError saying who must be named."""
        session, agent = asker.session, asker.agent
        if session is not None and "/" not in session:
            raise VisibilityError(
                f"`{session}` is not a session key (they are written AGENT/SESSION).",
                fix="pass the session as it appears in sessionKey, e.g. main/2026-11-20-a1b2",
            )
        owner = session.split("/", 1)[0] if session else None
        if agent and owner and agent != owner:
            raise VisibilityError(
                f"Session {session} belongs to agent {owner}, not {agent}.",
                fix=f"pass --agent {owner}, or leave --agent out",
            )
        if visibility in ("self", "tree") and session is None:
            raise VisibilityError(
                f"{_VISIBILITY_KEY} is {visibility!r}: transcripts are shown only to a session, "
                "and none was named.",
                fix="pass the asking session (--session AGENT/SESSION; `session` for agents)",
            )
        if visibility == "agent" and not (agent or owner):
            raise VisibilityError(
                f"{_VISIBILITY_KEY} is 'agent': transcripts are shown only to an agent, and none "
                "was named.",
                fix="pass the asking agent (--agent ID or --session AGENT/SESSION)",
            )
        return cls(visibility, Asker(agent or owner, session))

    @property
    def restricts(self) -> bool:
        return self.visibility != "all"

    def visible_files(self) -> tuple[str, list[object]]:
        """An SQL query for the `files.id` of the transcripts this scope sees."""
        session, agent = self.asker.session, self.asker.agent
        if self.visibility == "all":
            return "SELECT file_id FROM transcripts", []
        if self.visibility == "self" and session:
            return "SELECT file_id FROM transcripts WHERE session_key = ?", [session]
        if self.visibility == "tree" and session:
            return (
                "WITH RECURSIVE tree(key) AS (SELECT ? UNION "
                "SELECT t.session_key FROM transcripts t JOIN tree ON t.parent_key = tree.key) "
                "SELECT file_id FROM transcripts WHERE session_key IN (SELECT key FROM tree)",
                [session],
            )
        if self.visibility == "agent" and agent:
            return "SELECT file_id FROM transcripts WHERE agent_id = ?", [agent]
        return "SELECT NULL WHERE 0", []  # a level without its asker sees nothing


@dataclass(frozen=True)
class NoteFilter:
    """Empty fields do not restrict. Prefixes are alternatives; tags must all be present."""

    path_prefixes: tuple[str, ...] = ()
    since: dt.date | None = None  # inclusive, by the note's date (see the store's `dated`)
    until: dt.date | None = None  # inclusive
    tags: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ("memory",)  # none: nothing is admitted
    exclude_paths: tuple[str, ...] = ()
    scope: SessionScope = field(default_factory=SessionScope)  # transcripts the asker sees

    def __post_init__(self) -> None:
        for name, values in (("path prefixes", self.path_prefixes), ("tags", self.tags)):
            if len(values) > MAX_FILTER_VALUES:
                raise FilterError(
                    f"{len(values):,} {name} were given; one search takes at most "
                    f"{MAX_FILTER_VALUES}.",
                    fix=f"pass the {name} that matter (at most {MAX_FILTER_VALUES}), or none",
                )

    @property
    def narrows(self) -> bool:
        """Whether it admits fewer than all memory notes (the unfiltered default). The
        searcher also narrows a default filter while the index holds other sources."""
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
        clauses: list[str] = [f"source IN ({','.join('?' * len(self.sources))})"]
        params: list[object] = list(self.sources)
        if not self.sources:
            clauses = ["0"]
        if "sessions" in self.sources and self.scope.restricts:
            visible, visible_params = self.scope.visible_files()
            clauses.append(f"(source != 'sessions' OR id IN ({visible}))")
            params.extend(visible_params)
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
