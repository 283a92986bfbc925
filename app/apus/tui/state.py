"""What the status bar says about embeddings, from the index status and the latest search."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from apus.search.engine import LegReport

State = Literal["ready", "rebuilding", "keyword-only", "paused", "unavailable", "off", "unknown"]


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
    embeddings: Mapping[str, Any] | None,
    status_at: float,
    evidence: VectorEvidence | None = None,
) -> ProviderView:
    """Combine the last index status with the last hybrid search; the newer one wins.

    A search finds a crashed embedding server before the next status poll does, and a search
    that gets vectors again proves recovery just as quickly.
    """
    if embeddings is None:
        return ProviderView("unknown", "opening the index…")
    state = str(embeddings.get("state", "off"))
    reason, fix = split_reason(str(embeddings.get("reason") or ""))
    fix = str(embeddings.get("fix") or "") or fix
    if evidence is not None and evidence.at >= status_at:
        if state == "ready" and not evidence.report.ran:
            state = "keyword-only"
            reason, fix = split_reason(evidence.report.reason)
        elif state == "keyword-only" and evidence.report.ran:
            state, reason = "ready", ""
    if state == "ready":
        return ProviderView("ready", "semantic ready")
    if state == "rebuilding":
        percent = progress_percent(embeddings.get("progress"))
        text = "rebuilding" if percent is None else f"rebuilding {percent}%"
        return ProviderView("rebuilding", text, reason)
    if state == "keyword-only":
        return ProviderView(
            "keyword-only", f"keyword-only: {reason or 'embeddings unavailable'}", fix or reason
        )
    if state == "unavailable":
        return ProviderView("unavailable", f"unavailable: {reason}", fix or reason)
    if state == "paused":
        return ProviderView("paused", f"paused: {fix or reason}", reason)
    return ProviderView("off", "keyword search (embeddings off)", reason)


def split_reason(text: str) -> tuple[str, str]:
    """Domain errors read "what happened\nFix: what to do"; the status bar shows the first."""
    first, _, rest = text.partition("\n")
    return first.strip(), rest.strip().removeprefix("Fix:").strip()


def progress_percent(progress: object) -> int | None:
    """A whole percentage from "42%", {"done": n, "total": m} or a 0..1 fraction."""
    if isinstance(progress, str):
        text = progress.strip().removesuffix("%")
        return int(float(text)) if text.replace(".", "", 1).isdigit() else None
    if isinstance(progress, Mapping):
        done, total = progress.get("done"), progress.get("total")
        if isinstance(done, int | float) and isinstance(total, int | float) and total > 0:
            return int(100 * done / total)
        return None
    if isinstance(progress, int | float) and 0 <= progress <= 1:
        return int(100 * progress)
    return None


@dataclass(frozen=True)
class BackgroundWork:
    """A long job the status bar shows with a progress bar (total 0: size not known yet)."""

    label: str
    phase: str = ""  # the domain's phase name: scan, index, keyword, embed, download
    done: int = 0
    total: int = 0
    eta_seconds: float | None = None
