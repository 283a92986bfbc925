"""Quantities for people: sizes and durations as every face prints them."""

from __future__ import annotations

from apus.units import human_duration, human_size


def test_sizes_use_binary_multiples() -> None:
    assert human_size(512) == "512 bytes"
    assert human_size(3 * 1024 + 205) == "3.2 KB"
    assert human_size(5 * 1024 * 1024) == "5.0 MB"


def test_durations_pick_the_unit_that_reads_at_a_glance() -> None:
    assert human_duration(0.4) == "under a second"
    assert human_duration(42) == "42 s"
    assert human_duration(150) == "2 min"
    assert human_duration(2.5 * 3600) == "2.5 h"
