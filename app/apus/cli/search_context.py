"""What `apus memory search` says beside its hits: dates it read from the query, and notes
a running sync has not read yet, how much of the vault search by meaning covered while
vectors are being built (on stderr, and in the `--json` object)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from apus.units import human_duration

if TYPE_CHECKING:
    from apus.indexing.progress import SyncProgress
    from apus.search.time_words import DateWindow


@dataclass(frozen=True)
class SearchContext:
    """What a search answer says beside its hits: dates read from the query (and whether
    they held nothing, so any date was searched), notes not read yet, and the share of
    passages a partial vector set covered."""

    window: DateWindow | None
    widened: bool
    reading: SyncProgress | None
    coverage: float | None = None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.window is not None:
            data["timeWindow"] = {
                "since": None if self.window.since is None else self.window.since.isoformat(),
                "until": None if self.window.until is None else self.window.until.isoformat(),
                "text": self.window.text,
                "source": "query",
                "widened": self.widened,
            }
        if self.reading is not None:
            data["indexing"] = {
                "phase": self.reading.label,
                "done": self.reading.done,
                "total": self.reading.total,
                "eta": None
                if self.reading.eta_seconds is None
                else round(self.reading.eta_seconds, 1),
            }
        if self.coverage is not None:
            data["coverage"] = round(self.coverage, 4)
        return data

    def notices(self) -> list[str]:
        said = []
        if self.window is not None:
            days = f"{self.window.since or '…'} to {self.window.until or '…'}"
            said.append(
                f"Dates read from the query: {self.window.text!r} = {days}"
                + ("; nothing is dated then, so these are from any date" if self.widened else "")
                + " (--no-time-words searches the words as written)."
            )
        if self.reading is not None:
            progress = self.reading
            count = f" {progress.done:,} of {progress.total:,}" if progress.total else ""
            left = (
                f", about {human_duration(progress.eta_seconds)} left"
                if progress.eta_seconds is not None
                else ""
            )
            said.append(
                f"Still indexing: {progress.label}{count}{left}. Results cover only the notes "
                "read so far; ask again when it is done."
            )
        if self.coverage is not None:
            # The vector leg's modules, only while it served a partial vector set.
            from apus.search.vector_leg import coverage_sentence

            said.append(
                f"Still embedding: {coverage_sentence(self.coverage)}; the rest are found by "
                "their words."
            )
        return said
