"""What the status bar says about embeddings, from the index status and the latest search."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from apus.index.status import EmbeddingsState
from apus.search.results import LegReport

State = Literal[
    "ready", "embedding", "rebuilding", "keyword-only", "paused", "unavailable", "off", "unknown"
]


@dataclass(frozen=True)
class ProviderView:
    state: State
    text: str  # one short line for the status bar
    detail: str = ""  # the reason or the fix, for the status screen and tooltips


@dataclass(frozen=True)
class VectorEvidence:
    """What the vector leg of a hybrid search did, and when (monotonic seconds)."""

    report: LegReport
    at: float


def provider_view(
    embeddings: EmbeddingsState | None,
    status_at: float,
    evidence: VectorEvidence | None = None,
) -> ProviderView:
    """Combine the last index status with the last hybrid search; the newer one wins.

    A search finds a crashed embedding server before the next status poll does, and a search
    that gets vectors again proves recovery just as quickly.
    """
    if embeddings is None:
        return ProviderView("unknown", "opening the index…")
    state: State = embeddings.state
    reason, fix = embeddings.reason, embeddings.fix
    if evidence is not None and evidence.at >= status_at:
        if state == "ready" and not evidence.report.ran:
            state = "keyword-only"
            reason, fix = evidence.report.reason, evidence.report.fix
        elif state == "keyword-only" and evidence.report.ran and evidence.report.coverage is None:
            state, reason, fix = "ready", "", ""
    if state == "ready":
        return ProviderView("ready", "semantic ready")
    if state in ("embedding", "rebuilding"):
        # The same figure as the progress bar on the right: chunks with vectors, vault-wide.
        percent = embeddings.percent
        text = state if percent is None else f"{state} {percent}%"
        return ProviderView(state, text, reason)
    if state == "keyword-only":
        return ProviderView(
            "keyword-only", f"keyword-only: {reason or 'embeddings unavailable'}", fix or reason
        )
    if state == "unavailable":
        return ProviderView("unavailable", f"unavailable: {reason}", fix or reason)
    if state == "paused":
        return ProviderView("paused", f"paused: {fix or reason}", reason)
    return ProviderView("off", "keyword search (embeddings off)", reason)


@dataclass(frozen=True)
class BackgroundWork:
    """A long job the status bar shows with a progress bar (total 0: size not known yet)."""

    label: str
    phase: str = ""  # the domain's phase name: scan, index, keyword, embed, download
    done: int = 0
    total: int = 0
    eta_seconds: float | None = None
