"""Quantities for people: one way to write a byte count or a duration everywhere Apus shows one."""

from __future__ import annotations


def human_size(num_bytes: int) -> str:
    """ "512 bytes", "3.2 KB", "5.0 MB", "1.3 GB" (binary multiples, as file managers do)."""
    value = float(num_bytes)
    if value < 1024:
        return f"{num_bytes} bytes"
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            return f"{value:.1f} {unit}"
    return f"{value:.1f} GB"


def human_duration(seconds: float) -> str:
    """ "under a second", "42 s", "7 min", "2.5 h": as long as it reads at a glance."""
    if seconds < 1:
        return "under a second"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
